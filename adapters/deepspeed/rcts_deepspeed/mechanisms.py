"""How an rcts recompute config is expressed with DeepSpeed's activation checkpointing
(deepspeed/runtime/activation_checkpointing/checkpointing.py), on the shared block:

  full recompute (uniform N, block N)   checkpointing.checkpoint over a chunk of layers
  selective core_attn / mlp / layernorm checkpointing.checkpoint over that module
                                        (DeepSpeed has no output-discarding checkpoint:
                                        selective layernorm is an ordinary checkpoint)
  attention dropout                     inside get_cuda_rng_tracker().fork() (the
                                        model-parallel-rng stream, design §5)
  seeds                                 model_parallel_cuda_manual_seed(run.seed)
  tensor parallelism                    tp.py (one gloo process per rank), its mpu given
                                        to checkpointing.configure
  distribute_saved_activations          partition_activations (each TP rank keeps 1/tp
                                        of every checkpoint input, all-gathered for the
                                        recompute: Megatron-LM's option's counterpart)

A mode picks DeepSpeed's other checkpointing knobs, which must not change a bit of what
the block computes (each mode has its own expectation file):

  plain       partition_activations as the config's distribute_saved_activations
  partition   partition_activations on every checkpoint, at any TP size
  cpu         partition_activations + checkpoint_in_cpu (configure's docstring at
              checkpointing.py:1183 says CPU checkpointing needs partitioned activations)
  contiguous  partition_activations + contiguous_checkpointing with num_checkpoints =
              the checkpoints one forward makes, + synchronize (a no-op on the CPU
              accelerator: cpu_accelerator.py synchronize returns)
  non_reentrant  as plain, with DeepSpeed's other implementation,
              checkpointing.non_reentrant_checkpoint (saved-tensor hooks, no autograd
              Function) in place of checkpointing.checkpoint

What cannot be expressed is refused with the reason (the case is skipped).
"""
import contextlib
import hashlib

import torch

from rcts_adapter_kit.config import DENSE_ONE_PROCESS, READ, inert_unless, only, refusal, subset_of
from rcts_adapter_kit.recorder import Recorder, storage_ptr
from rcts_adapter_kit.rng import DEFAULT_CPU, Generators
from rcts_adapter_kit.saved import note_save

from rcts_pytorch.mechanisms import Mechanism as PyTorchMechanism

from . import faults

MODES = ("plain", "partition", "cpu", "contiguous", "non_reentrant")
SELECTIVE = {"core_attn", "mlp", "layernorm"}
TRACKER = "deepspeed.tracker.model-parallel-rng"  # the mask stream of a draw inside the fork
CHECKPOINT_OP = "deepspeed.checkpointing.checkpoint"

_NO_OFFLOAD = ("rcts's offload (save_on_cpu-style module / layer offload) has no counterpart in DeepSpeed's "
               "activation checkpointing; its checkpoint_in_cpu is the adapter's 'cpu' mode")
CASE_KEYS = ("id", "description", "ranks", "backends", "config", "variants", "expect", "xfail")
SPEC = {
    **DENSE_ONE_PROCESS,
    "model.add_bias_linear": READ,  # model.py: the four linears with or without their biases
    "model.activation": only("gelu", "swiglu", why="only GeLU (tanh) and SwiGLU are modelled"),
    "model.activation_dtype": only("f32", "bf16", "f64"),
    "parallel.tensor_model_parallel_size": READ,
    "parallel.sequence_parallel": only(False, why="sequence parallelism is not modelled (the shared block runs its "
                                                  "layernorms and dropout on the whole sequence)"),
    **{f"parallel.{k}": only(1, why="the adapter runs tensor parallelism only (no pipeline or expert parallelism)")
       for k in ("pipeline_model_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size")},
    "recompute.recompute_granularity": only(None, "full", "selective"),
    "recompute.recompute_method": READ,
    "recompute.recompute_num_layers": READ,
    "recompute.recompute_modules": inert_unless("recompute.recompute_granularity", "selective",
                                                subset_of(SELECTIVE, why="no counterpart in the adapter")),
    "recompute.distribute_saved_activations": READ,
    "offload.cpu_offloading": only(False, why=_NO_OFFLOAD),
    "offload.fine_grained_activation_offloading": only(False, why=_NO_OFFLOAD),
}


def unsupported(cfg, world_size, mode):
    """Why the adapter cannot run `cfg` (a resolved rcts config) in `mode`; None when it can."""
    p, r = cfg["parallel"], cfg["recompute"]
    tp = p["tensor_model_parallel_size"]
    if world_size != tp:
        return (f"world size {world_size} with tensor_model_parallel_size {tp}: the adapter runs tensor "
                "parallelism only (every rank one TP rank; no data or pipeline parallelism)")
    why = refusal(cfg, SPEC)
    if why:
        return why
    if partitioned(cfg, mode) and r.get("recompute_granularity") == "selective" \
            and "layernorm" in r.get("recompute_modules", []):
        return ("selective layernorm recompute with partitioned checkpoint inputs: DeepSpeed replaces the input "
                "tensor's data by an empty tensor (checkpointing.py:456) and the layernorm's input is also the "
                "residual's, which would then read an empty tensor")
    return None


def partitioned(cfg, mode):
    return mode not in ("plain", "non_reentrant") or bool(cfg["recompute"].get("distribute_saved_activations"))


def checkpoints_per_forward(cfg):
    """How many checkpoints one forward makes: contiguous_checkpointing's num_checkpoints."""
    r, n = cfg["recompute"], cfg["model"]["num_layers"]
    if r.get("recompute_granularity") == "full":
        k = r["recompute_num_layers"]
        return -(-n // k) if r["recompute_method"] == "uniform" else k
    if r.get("recompute_granularity") == "selective":
        return n * len(r.get("recompute_modules", []))
    return 0


def configure_kwargs(cfg, mode):
    """checkpointing.configure's keyword arguments for a run in `mode`."""
    part = partitioned(cfg, mode)
    kw = {"partition_activations": part, "checkpoint_in_cpu": mode == "cpu",
          "contiguous_checkpointing": mode == "contiguous", "synchronize": mode == "contiguous", "profile": False}
    if mode == "contiguous":
        kw["num_checkpoints"] = checkpoints_per_forward(cfg)
    return kw


class DeepSpeedRecorder(Recorder):
    """The kit's recorder, each mask naming the stream it was drawn from: DeepSpeed's
    tracker stream inside its fork, else the default CPU generator."""

    def __init__(self, param_storages=()):
        super().__init__(param_storages)
        self.stream = None

    def record_mask(self, site, kind, p, keep):
        super().record_mask(site, kind, p, keep)
        if self.stream:
            self.masks[-1]["stream"] = self.stream


class DeepSpeedGenerators(Generators):
    """The default CPU generator (DeepSpeed's CPU accelerator's device generator too:
    cpu_accelerator.py get_rng_state is torch.get_rng_state) and every stream of
    DeepSpeed's tracker, each as sha256 of its state."""

    def digest(self):
        from deepspeed.runtime.activation_checkpointing import checkpointing
        out = super().digest()
        for name, st in sorted(checkpointing.get_cuda_rng_tracker().get_states().items()):
            out[f"deepspeed.tracker.{name}"] = hashlib.sha256(st.numpy().tobytes()).hexdigest()
        return out


class Mechanism(PyTorchMechanism):
    """The PyTorch adapter's plan (chunks, regions) with DeepSpeed's checkpoint in place of
    torch.utils.checkpoint, and DeepSpeed's tracker fork around attention dropout."""

    def __init__(self, cfg, rec, tp, mode="plain"):
        super().__init__(cfg, "reentrant", rec)
        self.tp, self.non_reentrant = tp, mode == "non_reentrant"
        self.offload = set()
        self.layer_offload = -1

    def attention_dropout_rng(self):
        from deepspeed.runtime.activation_checkpointing import checkpointing

        @contextlib.contextmanager
        def fork():
            outer, self.rec.stream = self.rec.stream, TRACKER
            try:
                with checkpointing.get_cuda_rng_tracker().fork():
                    yield
            finally:
                self.rec.stream = outer

        return fork()

    def checkpoint(self, fn, x, owner, sac=False):
        """DeepSpeed's checkpoint(fn, x). Its CheckpointFunction keeps the inputs in ctx
        attributes (deepspeed_saved_tensors; a partition or CPU copy in each one's
        saved_data), not through save_for_backward, so no saved-tensor hook sees them: the
        adapter reads what the node holds after the call and records those tensors."""
        from deepspeed.runtime.activation_checkpointing import checkpointing
        ptr = storage_ptr(x)
        self.rec.checkpoint_inputs[ptr] = owner
        fn = self.rec.under_current_path(fn)
        try:
            if self.non_reentrant:
                return self.non_reentrant_checkpoint(fn, x, owner)
            y = checkpointing.checkpoint(fn, x)
        finally:
            self.rec.checkpoint_inputs.pop(ptr, None)
        node = y.grad_fn
        if torch.is_grad_enabled() and node is not None:
            for k, t in enumerate(getattr(node, "deepspeed_saved_tensors", None) or ()):
                if not torch.is_tensor(t):
                    continue
                held = t.saved_data if getattr(t, "saved_data", None) is not None else t
                note_save(self.rec, held, "checkpoint_input", f"checkpoint_input.{k} (deepspeed ctx)", owner,
                          op=CHECKPOINT_OP, watch=True)
        return y

    def non_reentrant_checkpoint(self, fn, x, owner):
        """DeepSpeed's non_reentrant_checkpoint(fn, x): its saved-tensor hooks keep
        placeholders for what the region saves and the inputs in the function's closure
        (unpartitioned: the input tensor itself), out of the kit's hooks' and the graph's
        sight, so the input is recorded as what that checkpoint holds (the PyTorch
        adapter's rule for torch's non-reentrant checkpoint)."""
        from deepspeed.runtime.activation_checkpointing import checkpointing
        if torch.is_grad_enabled():
            note_save(self.rec, x, "checkpoint_input", "checkpoint_input (non_reentrant_checkpoint closure)", owner,
                      op=CHECKPOINT_OP)
        return checkpointing.non_reentrant_checkpoint(fn, x)

    def offload_hooks(self):  # never reached: offload configs are refused (SPEC)
        raise AssertionError("offload is refused by the DeepSpeed adapter's SPEC")


def seed(mpu_):
    """model_parallel_cuda_manual_seed(seed), DeepSpeed's own seeding (design §5's seeds:
    the default generator seed, model-parallel-rng seed + 2718 + tp rank)."""
    from deepspeed.runtime.activation_checkpointing import checkpointing

    from .tp import Mpu

    def go(s):
        real = checkpointing.mpu
        if faults.active("tp_seed_without_rank"):
            checkpointing.mpu = Mpu(mpu_.group, rank=0)
        try:
            checkpointing.model_parallel_cuda_manual_seed(s)
        finally:
            checkpointing.mpu = real

    return go


GENERATOR = DEFAULT_CPU
