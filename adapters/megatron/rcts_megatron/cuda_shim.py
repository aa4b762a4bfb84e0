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
  torch.cuda.Stream, torch.cuda.current_stream, torch.cuda.stream   (install_streams(), MoE only)
                                   -> one synchronous stand-in stream (wait_stream a no-op,
                                      record_event an event whose synchronize returns at once):
                                      MoEAlltoAllTokenDispatcher copies its split sizes to the
                                      host on a side stream (token_dispatcher.py:445, 862-899);
                                      on the CPU every copy has finished when it returns
  torch.distributed.all_to_all_single  (install_streams(), MoE only)
                                   -> split sizes given as tensors are passed on as lists: on
                                      CUDA the dispatcher hands over host copies of its split
                                      sizes (maybe_move_tensor_to_cpu, moe_utils.py:1093, copies
                                      only tensor.is_cuda ones, as numpy arrays); on the emulated
                                      device they are CPU tensors already, which the binding
                                      refuses (TypeError: incompatible function arguments)

Nothing of Megatron-LM is patched. install() must run before megatron.core is imported
(random.py binds _lazy_call at import). Consequence of one generator: Megatron's "CPU RNG
state" and its "CUDA RNG state" are the same state, so the tracker's fork() logs "CPU
RNG state changed within GPU RNG context" after every draw inside a fork (silenced here:
on one emulated device it is expected, not a finding).
"""
import contextlib
import logging

import torch

PATCHED = ("torch.cuda.current_device", "torch.cuda.get_rng_state", "torch.cuda.random.get_rng_state",
           "torch.cuda.manual_seed", "torch.cuda.default_generators", "torch.cuda._lazy_call",
           "torch.cuda.synchronize")
# Installed by install_streams() for MoE cases only (nothing else the adapter runs reaches them).
STREAM_PATCHED = ("torch.cuda.Stream", "torch.cuda.current_stream", "torch.cuda.stream",
                  "torch.distributed.all_to_all_single")


class _AnyIndex:
    """torch.cuda.default_generators on one emulated device: every index is the CPU generator."""

    def __getitem__(self, idx):
        return torch.default_generator

    def __len__(self):
        return 1


class _Event:
    def synchronize(self):
        return None


class _Stream:
    """A CUDA stream on the one synchronous CPU device: work is done when it is issued."""

    def __init__(self, *args, **kwargs):
        pass

    def wait_stream(self, other):
        return None

    def record_event(self, event=None):
        return _Event()

    def synchronize(self):
        return None


_CURRENT = _Stream()


def _get_rng_state(device="cuda"):
    return torch.get_rng_state()


def _manual_seed(seed):
    torch.default_generator.manual_seed(int(seed))


_installed = False
_streams = False


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


def install_streams():
    """The stand-in stream for MoEAlltoAllTokenDispatcher (before the first MoE layer is built)."""
    global _streams
    torch.cuda.Stream = _Stream
    torch.cuda.current_stream = lambda device=None: _CURRENT
    torch.cuda.stream = lambda stream=None: contextlib.nullcontext()
    a2a = torch.distributed.all_to_all_single

    def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, *args, **kwargs):
        host = lambda s: s.tolist() if torch.is_tensor(s) else s  # the host copy a GPU run hands over
        return a2a(output, input, host(output_split_sizes), host(input_split_sizes), *args, **kwargs)

    torch.distributed.all_to_all_single = all_to_all_single
    _streams = True


def description():
    return ("cpu rng shim (one emulated device, torch.default_generator): " + ", ".join(PATCHED)
            + ("; MoE dispatch on the CPU (one synchronous stand-in stream, split sizes as host lists): "
               + ", ".join(STREAM_PATCHED) if _streams else ""))
