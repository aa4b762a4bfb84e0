"""Running an older DeepSpeed release (scripts/check-deepspeed --release R, --shim S).

check-deepspeed puts the release's pip target first on PYTHONPATH and tells the adapter
what it asked for through the environment:

  RCTS_DEEPSPEED_RELEASE=R   the deepspeed imported must be R (a stale PYTHONPATH would
                             judge another release under R's name): refused otherwise
  RCTS_DEEPSPEED_SHIMS=S     bridges for a release's gaps, each named in every dump's
                             implementation string (adapters/deepspeed/README.md, "Releases")

No torch or deepspeed import here: the checks are plain Python (tests/adapter/deepspeed/
releases_test.py).
"""
import os

RELEASE_ENV = "RCTS_DEEPSPEED_RELEASE"
SHIMS_ENV = "RCTS_DEEPSPEED_SHIMS"

# cpu_stream: the CPU accelerator's `Stream` property is None (accelerator/cpu_accelerator.py:119-120
# in 0.19.5 to 0.19.8), and every release before 0.19.8 calls it when a checkpoint runs
# (`transport_stream = get_accelerator().Stream(device=cuda_device)`, checkpointing.py:605 and :839
# in 0.19.7), so a checkpoint raises TypeError there. The shim makes `Stream` a factory that returns
# None: the value is unused in those releases (its only uses are commented out), 0.19.8 no longer
# makes the call. With it, an older release can be judged on everything after that line.
SHIMS = {
    "cpu_stream": "the CPU accelerator's Stream property (None, cpu_accelerator.py:119) made a factory returning "
                  "None (releases before 0.19.8 call it in every checkpoint, checkpointing.py:605)",
}


class ReleaseError(Exception):
    """A release or shim the adapter refuses to run (the message names the variable and value)."""


def check_release(want, version, where):
    """The deepspeed imported (`version` from `where`) must be `want` when one is asked for."""
    if want and version != want:
        raise ReleaseError(f"{RELEASE_ENV}={want}: the deepspeed imported is {version} ({where})")


def shims(text=None):
    """The shims asked for (RCTS_DEEPSPEED_SHIMS, comma-separated), in a fixed order; an
    unknown name is refused."""
    text = os.environ.get(SHIMS_ENV, "") if text is None else text
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in SHIMS]
    if bad:
        raise ReleaseError(f"{SHIMS_ENV}={text}: unknown shim {bad[0]!r} (known: {', '.join(sorted(SHIMS))})")
    return sorted(set(names))


def describe(names):
    """The shims' part of the implementation string ("" when none)."""
    return "".join(f"; SHIM {n}: {SHIMS[n]}" for n in names)


def install_cpu_stream(accelerator):
    """The cpu_stream shim on `accelerator` (the CPU accelerator object): its class's
    `Stream` property, where it is None, becomes a factory returning None. Returns whether
    it changed anything (False where the release's Stream is already callable)."""
    if accelerator.Stream is not None:
        return False
    type(accelerator).Stream = property(lambda self: (lambda *args, **kwargs: None))
    return True
