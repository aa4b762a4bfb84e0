"""The one emulated device: megatron-core calls torch.cuda for its RNG and to place a few
buffers; on a machine without a GPU those calls fail ("Found no NVIDIA driver"). This
module maps exactly the torch.cuda names megatron-core 0.16 reaches on the paths the
adapter runs onto the CPU, so that one generator, PyTorch's default CPU generator (the
one CPU dropout draws from), plays the device generator:

  torch.cuda.current_device        -> torch.device("cpu")  (buffers Megatron places "on the device")
  torch.cuda.get_rng_state         -> torch.get_rng_state()
  torch.cuda.random.get_rng_state  -> torch.get_rng_state()
  torch.cuda.manual_seed           -> torch.default_generator.manual_seed
  torch.cuda.default_generators    -> a table answering torch.default_generator for every index
  torch.cuda._lazy_call            -> runs the callback at once (there is no CUDA init to wait for;
                                      Megatron's _set_cuda_rng_state defers its set_state through it)
  torch.cuda.synchronize           -> no-op (parallel_state calls it; the CPU is synchronous)

Nothing of Megatron-LM is patched. install() must run before megatron.core is imported
(random.py binds _lazy_call at import). Consequence of one generator: Megatron's "CPU RNG
state" and its "CUDA RNG state" are the same state, so the tracker's fork() logs "CPU
RNG state changed within GPU RNG context" after every draw inside a fork (silenced here:
on one emulated device it is expected, not a finding).
"""
import logging

import torch

PATCHED = ("torch.cuda.current_device", "torch.cuda.get_rng_state", "torch.cuda.random.get_rng_state",
           "torch.cuda.manual_seed", "torch.cuda.default_generators", "torch.cuda._lazy_call",
           "torch.cuda.synchronize")


class _AnyIndex:
    """torch.cuda.default_generators on one emulated device: every index is the CPU generator."""

    def __getitem__(self, idx):
        return torch.default_generator

    def __len__(self):
        return 1


def _get_rng_state(device="cuda"):
    return torch.get_rng_state()


def _manual_seed(seed):
    torch.default_generator.manual_seed(int(seed))


_installed = False


def install():
    global _installed
    if _installed:
        return
    if torch.cuda.is_available():
        raise RuntimeError("cuda_shim: a GPU is present; the emulated device is for CPU-only runs")
    torch.cuda.current_device = lambda: torch.device("cpu")
    torch.cuda.get_rng_state = _get_rng_state
    torch.cuda.random.get_rng_state = _get_rng_state
    torch.cuda.manual_seed = _manual_seed
    torch.cuda.default_generators = _AnyIndex()
    torch.cuda._lazy_call = lambda callable, **kwargs: callable()
    torch.cuda.synchronize = lambda device=None: None
    logging.getLogger("megatron.core.tensor_parallel.random").setLevel(logging.ERROR)
    _installed = True


def description():
    return "cpu rng shim (one emulated device, torch.default_generator): " + ", ".join(PATCHED)
