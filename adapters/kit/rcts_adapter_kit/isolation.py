"""What one case may leave behind in a process that serves the next (worker.serve): the
global torch state a run can change. `TorchState()` notes it when the worker starts;
`between()` after each case resets what a case changes by design and returns a line for
everything else that differs, which the worker reports and exits on."""
import os

import torch
import torch.nn.modules.module as _module
import torch.utils._python_dispatch as _dispatch

# Module hooks registered for every module (torch.nn.modules.module.register_module_*):
# a recorder that forgot to remove one would observe the next case's modules.
_GLOBAL_MODULE_HOOKS = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_with_kwargs",
                        "_global_forward_hooks_always_called", "_global_backward_pre_hooks", "_global_backward_hooks",
                        "_global_module_registration_hooks", "_global_parameter_registration_hooks",
                        "_global_buffer_registration_hooks")


def _observed():
    """Every piece of global state a case must leave as it found it, by name."""
    state = {
        # a RecordingHooks / save_on_cpu / non-reentrant checkpoint context left open
        "saved-tensor hooks": torch._C._autograd._top_saved_tensors_default_hooks(True) is not None,
        "saved-tensor hooks enabled": torch._C._autograd._saved_tensors_hooks_is_enabled(),
        # a TorchDispatchMode (Generators.guard, SaveNamer) or TorchFunctionMode left entered
        "dispatch modes": _dispatch._len_torch_dispatch_stack(),
        "function modes": torch._C._len_torch_function_stack(),
        "grad mode": torch.is_grad_enabled(),
        "inference mode": torch.is_inference_mode_enabled(),
        "anomaly mode": torch.is_anomaly_enabled(),
        "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "default dtype": str(torch.get_default_dtype()),
        "torch threads": torch.get_num_threads(),
        # fault switches (RCTS_PYTORCH_FAULT, ...) and the suite's other settings; not the whole
        # environment, which torch itself extends on first use (TORCHINDUCTOR_CACHE_DIR)
        "environment": {k: v for k, v in os.environ.items() if k.startswith("RCTS_")},
    }
    state.update({f"module hooks ({n})": len(getattr(_module, n)) for n in _GLOBAL_MODULE_HOOKS
                  if hasattr(_module, n)})
    return state


class TorchState:
    """The worker's state when it started; `between()` restores the default generator (every
    run seeds it, and a fresh process starts from torch's initial state) and names what else
    changed. `also` (callables) resets an adapter's own per-case state, such as a fault's list."""

    def __init__(self, also=()):
        self.rng = torch.get_rng_state()
        self.start = _observed()
        self.also = also

    def between(self):
        torch.set_rng_state(self.rng)
        for reset in self.also:
            reset()
        now = _observed()
        return [_difference(k, self.start[k], now.get(k)) for k in self.start if now.get(k) != self.start[k]]


def _difference(name, was, now):
    if name == "environment":
        keys = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k))
        return "environment: " + ", ".join(f"{k}={was.get(k)!r} -> {now.get(k)!r}" for k in keys)
    return f"{name}: {was!r} -> {now!r}"
