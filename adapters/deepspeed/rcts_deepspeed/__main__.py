"""rcts DeepSpeed adapter: run a case's baseline, variants and reruns with DeepSpeed's
activation checkpointing on the shared block, and write format-1 dumps that `rcts check`
judges.

  python -m rcts_deepspeed CASE.json --rcts-dump ROOT --out OUT [--mode M] [--world-size W]
  python -m rcts_deepspeed --serve    (one rank: many cases in one process, the kit's worker)

ROOT is what `rcts run CASE.json --dump ROOT` (under `mpirun -n W` for W ranks) wrote;
rank r reads ROOT/<case>/cpu/rank<r>/<run>/ (this rank's parameters before step 0,
inputs, targets, each run's resolved config and rank coordinates) and writes
OUT/<case>/deepspeed-cpu/rank<r>/<run>/. One process per rank: with W > 1 the adapter
launches W with torch.distributed.run (gloo). --mode picks DeepSpeed's checkpointing
knobs (mechanisms.py). A case it cannot express prints "skip: <reason>", writes
OUT/<case>/SKIPPED and exits 0. When DeepSpeed raises it prints "raised: <run>: <error>
at <deepspeed file:line>", writes OUT/<case>/ERRORED (no runs) and exits 1. Exit 2: bad
input (the message names the file and field).
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile

os.environ.setdefault("DS_ACCELERATOR", "cpu")  # before deepspeed is imported: its accelerator is chosen once

import torch  # noqa: E402

from rcts_adapter_kit import dump as kit  # noqa: E402
from rcts_adapter_kit.case import Case, rcts_runs  # noqa: E402
from rcts_adapter_kit.errors import AdapterError, raised_in  # noqa: E402
from rcts_adapter_kit.worker import SERVE_FLAG, serve  # noqa: E402

from . import faults, releases  # noqa: E402
from .mechanisms import CASE_KEYS, MODES, unsupported  # noqa: E402

BACKEND = "deepspeed-cpu"
# The block is the PyTorch adapter's, under CPU autograd: its saved-tensor profile.
MEMORY_PROFILE = "torch-cpu"
# The shims and patches around DeepSpeed, each listed in adapters/deepspeed/README.md.
SHIMS = ("DS_ACCELERATOR=cpu; deepspeed.init_distributed(dist_backend='gloo') with build_shm_op replaced by "
         "'no op' (comm/torch.py:207; inference_all_reduce only); a minimal mpu (rcts_deepspeed/tp.py: "
         "one TP group of every rank); TP sums by all_gather + rank-order add; the block is rcts_pytorch.model")


def implementation(mode):
    import deepspeed
    fault = faults.current()
    how = "checkpointing.non_reentrant_checkpoint" if mode == "non_reentrant" else "checkpointing.checkpoint"
    version = (f"deepspeed {deepspeed.__version__} ({os.path.dirname(deepspeed.__file__)}) @ torch {torch.__version__}, "
               f"{how}, mode {mode}; {SHIMS}" + releases.describe(releases.shims()) +
               (f"; FAULT INJECTED: {fault}" if fault else ""))
    return {"name": "deepspeed", "version": version, "backend": BACKEND, "arithmetic": "pytorch",
            "rng_states": "opaque", "mask_rule": "none", "memory_profile": MEMORY_PROFILE,
            "generator": "torch.default_cpu_generator"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed():
    """deepspeed.init_distributed over gloo; a single rank started without a launcher gets
    the environment a launcher would give it (so DeepSpeed does not look for MPI)."""
    import importlib

    import deepspeed
    ds_torch_comm = importlib.import_module("deepspeed.comm.torch")  # the package's attribute `torch` is torch
    # Shim: the shared-memory C++ op DeepSpeed JIT-builds for the CPU accelerator at init
    # (comm/torch.py:207, build_shm_op) serves inference_all_reduce only (comm/torch.py:292),
    # never checkpointing's all_gather; building it costs minutes on a fresh machine.
    ds_torch_comm.build_shm_op = lambda: None
    # check-deepspeed --release R: the deepspeed imported must be R; --shim: the bridges asked for.
    releases.check_release(os.environ.get(releases.RELEASE_ENV, ""), deepspeed.__version__,
                           os.path.dirname(deepspeed.__file__))
    if "cpu_stream" in releases.shims():
        from deepspeed.accelerator import get_accelerator
        releases.install_cpu_stream(get_accelerator())
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(free_port()))
    if not torch.distributed.is_initialized():
        deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)
    return torch.distributed.get_rank()


def worker(a, case_id):
    """One rank: every run of the case. Returns (rc, message of a raise or None)."""
    from deepspeed.runtime.activation_checkpointing import checkpointing

    from rcts_pytorch import driver

    from . import mechanisms
    from .tp import Mpu, TensorParallel

    rank = init_distributed()
    runs = rcts_runs(a.rcts_dump, case_id, "cpu", rank)
    base = kit.BaselineDump(runs["baseline"][0])
    group = torch.distributed.group.WORLD
    tp = TensorParallel(group) if torch.distributed.get_world_size() > 1 else None
    mpu = Mpu(group)
    impl = implementation(a.mode)
    for name, (d, theirs) in runs.items():
        cfg = theirs["config"]
        if cfg["parallel"] != base.config["parallel"]:
            raise kit.DumpError(f"{d}: run '{name}' has other parallel settings than the baseline")
        checkpointing.configure(mpu, **mechanisms.configure_kwargs(cfg, a.mode))
        undo = faults.install()
        try:
            out = driver.run(cfg, base.params, base.inputs, base.targets, "reentrant",
                             mechanism=lambda c, rec: mechanisms.Mechanism(c, rec, tp, a.mode),
                             generators=mechanisms.DeepSpeedGenerators(), seed=mechanisms.seed(mpu),
                             recorder=mechanisms.DeepSpeedRecorder)
        except Exception as e:  # DeepSpeed's own code raised: a finding, not a skip; say where, in DeepSpeed
            import deepspeed
            at = raised_in(e, os.path.dirname(os.path.abspath(deepspeed.__file__)))
            where = f" at deepspeed/{at[0]}:{at[1]}" if at else ""
            msg = f"run '{name}': {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}{where}"
            # One write of the whole line: the ranks share the launcher's stderr pipe, and a
            # print's text and newline as two writes interleave into one line of both ranks.
            sys.stderr.write(f"raised: {msg}\n")
            sys.stderr.flush()
            if os.environ.get("RCTS_DEEPSPEED_TRACEBACK"):
                import traceback
                traceback.print_exc()
            return 1, msg
        finally:
            for u in reversed(undo):
                u()
            checkpointing.reset()
        meta = {"case_id": case_id, "case_file": a.case, "run": name, "role": theirs["run"]["role"],
                "of_variant": theirs["run"].get("of_variant", ""), "rank": theirs["rank"]}
        kit.write_run(kit.run_dir(a.out, case_id, BACKEND, name, theirs["rank"]["world_rank"]), meta, cfg, out, impl)
    return 0, None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="rcts_deepspeed", description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--rcts-dump", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=MODES, default="plain")
    ap.add_argument("--world-size", type=int, default=1)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        parsed = Case(a.case)  # strict: exit 2 naming the file, JSON path and value
        kit.out_dir(a.out)
        if a.worker:
            return worker(a, parsed.id)[0]
        return launch(a, parsed)
    except (AdapterError, releases.ReleaseError) as e:  # DumpError among them
        print(f"error: {e}", file=sys.stderr)
        return 2


def launch(a, parsed):
    case_id = parsed.id

    def skip(why):
        kit.mark_case(a.out, case_id, kit.SKIPPED, why)
        print(f"skip: {case_id}: {why}")
        return 0

    def raised(msg):
        kit.mark_case(a.out, case_id, kit.ERRORED, f"deepspeed raised: {msg}")
        print(f"raised: {case_id}: deepspeed raised: {msg}", file=sys.stderr, flush=True)
        return 1

    if "config_error" in parsed.expect:
        return skip("a config_error case runs nothing (rcts judges the config itself)")
    if a.world_size not in parsed.ranks:
        return skip(f"the case runs at world sizes {parsed.ranks}, not {a.world_size}")
    why = parsed.unmodelled(CASE_KEYS)
    if why:
        return skip(why)
    runs = rcts_runs(a.rcts_dump, case_id)
    for name, (d, m) in sorted(runs.items(), key=lambda r: r[0] != "baseline"):
        why = unsupported(m["config"], a.world_size, a.mode)
        if why:
            return skip(f"run '{name}': {why}" if name != "baseline" else why)
    if a.world_size == 1:  # in this process: one import of torch and DeepSpeed, not two
        rc, msg = worker(a, case_id)
        if msg:
            return raised(msg)
        print(f"wrote: {case_id}: {len(runs)} runs x 1 rank ({a.mode})")
        return rc
    args = [a.case, "--rcts-dump", a.rcts_dump, "--out", a.out, "--mode", a.mode, "--worker"]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(a.world_size),
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "-m", "rcts_deepspeed"] + args
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    log = r.stdout + r.stderr
    out_case = kit.case_dir(a.out, case_id)
    os.makedirs(out_case, exist_ok=True)
    with open(os.path.join(out_case, "ranks.log"), "w") as f:  # every rank's output, for a post-mortem
        f.write(log)
    said = [l.split("raised: ", 1)[1].split("raised: ")[0] for l in log.splitlines() if l.startswith("raised: ")]
    if r.returncode != 0 and said:
        return raised(said[0])
    if r.returncode != 0:
        text = log.strip().splitlines()
        tb = [l for l in text if l.strip().startswith("File ") or "Error" in l or "error:" in l]
        print(f"error: a rank of {case_id} failed (all output: {out_case}/ranks.log):\n  " +
              "\n  ".join(tb[-6:] or text[-6:]), file=sys.stderr)
        return 1
    print(f"wrote: {case_id}: {len(runs)} runs x {a.world_size} ranks ({a.mode})")
    return 0


def resets():
    """DeepSpeed's checkpointing state a case leaves (a fresh process has none of it):
    contiguous buffers, the tracker's streams, the configured mpu and knobs."""
    from deepspeed.runtime.activation_checkpointing import checkpointing
    checkpointing.reset()
    checkpointing.get_cuda_rng_tracker().reset()
    checkpointing._configure_defaults()
    checkpointing.mpu = None


if __name__ == "__main__":
    torch.set_num_threads(1)  # one fixed thread count: the same kernels for every run
    if sys.argv[1:] == [SERVE_FLAG]:  # one rank, many cases (the kit's worker); the process group stays up
        from rcts_adapter_kit.isolation import TorchState
        sys.exit(serve(main, TorchState(also=(resets,)).between))
    sys.exit(main())
