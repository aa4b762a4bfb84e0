"""How an rcts recompute/offload config is expressed with PyTorch's own mechanisms:

  full recompute (uniform N, block N)      torch.utils.checkpoint.checkpoint over a chunk of layers
  selective core_attn / mlp / layernorm    torch.utils.checkpoint.checkpoint over that module
  fine-grained offload of a module         torch.autograd.graph.save_on_cpu around that module
  layer-level cpu_offloading (first N)     torch.autograd.graph.save_on_cpu around each of those layers

`style` is "reentrant" or "non_reentrant" (checkpoint's use_reentrant). PyTorch has no
output-discarding checkpoint: selective `layernorm` is an ordinary checkpoint of the
layernorm (same values, other memory). What cannot be expressed is refused by
unsupported() with the reason, so the case is reported as skipped.
"""
import torch
import torch.utils.checkpoint as tc

from rcts_adapter_kit.config import READ, inert_unless, only, refusal, subset_of
from rcts_adapter_kit.recorder import storage_ptr
from rcts_adapter_kit.saved import note_save, offload_hooks

from . import faults

SELECTIVE = {"core_attn", "mlp", "layernorm"}
OFFLOADABLE = {"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"}

# The case-file keys the adapter models: not seed_ranks (a run seeded as another rank's
# coordinates: the adapter has one generator seeded with run.seed, no design §5 seeds).
CASE_KEYS = ("id", "description", "ranks", "backends", "config", "variants", "expect", "xfail")
_ONE_PROCESS = "the adapter runs one process (no tensor/pipeline/expert parallelism)"
# Every key of rcts's resolved config (reference/config/config_json.cpp) the adapter
# models, and for which values; any other key or value skips the case with the reason.
SPEC = {
    **{f"model.{k}": READ for k in ("num_layers", "hidden_size", "num_attention_heads", "seq_length",
                                    "micro_batch_size", "ffn_hidden_size", "attention_dropout", "hidden_dropout",
                                    "layernorm_epsilon")},
    "model.activation": only("gelu", "swiglu", why="only GeLU (tanh) and SwiGLU are modelled"),
    "model.activation_dtype": only("f32", "bf16", "f64"),
    "model.flash_attention": only(False, why="flash attention is not modelled (the adapter's core attention "
                                             "materialises the s x s probabilities)"),
    "model.fp8": only(None, why="FP8 is not modelled: the adapter has no FP8 GEMMs, amax histories or "
                                "scales, so a run would check a model without FP8"),
    **{f"model.{k}": inert_unless("model.fp8", lambda v: v is not None)
       for k in ("fp8_recipe", "fp8_amax_compute_algo", "fp8_amax_history_len", "fp8_margin")},
    "model.cuda_graph_impl": only("none", why="CUDA graphs need a GPU; the adapter runs eager on the CPU"),
    "model.cuda_graph_scope": inert_unless("model.cuda_graph_impl", lambda v: v != "none"),
    "model.num_moe_experts": only(0, why="MoE layers are not modelled (dense layers only)"),
    **{f"model.{k}": inert_unless("model.num_moe_experts", lambda v: v != 0)
       for k in ("moe_aux_loss_coeff", "moe_expert_dropout", "moe_ffn_hidden_size", "moe_grouped_gemm",
                 "moe_layer_freq", "moe_router_topk", "moe_shared_expert_intermediate_size",
                 "moe_shared_expert_overlap")},
    "model.overlap_moe_expert_parallel_comm": only(False, why="MoE layers are not modelled"),
    "model.multi_latent_attention": only(False, why="MLA layers are not modelled"),
    **{f"model.{k}": inert_unless("model.multi_latent_attention", True)
       for k in ("kv_lora_rank", "q_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim", "rotary_base")},
    "model.gated_delta_net": only(False, why="gated DeltaNet layers are not modelled"),
    **{f"model.{k}": inert_unless("model.gated_delta_net", True)
       for k in ("linear_attention_freq", "linear_attention_pattern", "linear_conv_kernel_dim",
                 "linear_key_head_dim", "linear_num_key_heads", "linear_num_value_heads", "linear_value_head_dim")},
    **{f"parallel.{k}": only(1, why=_ONE_PROCESS)
       for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "expert_model_parallel_size",
                 "expert_tensor_parallel_size")},
    "parallel.sequence_parallel": only(False, why=_ONE_PROCESS),
    "recompute.recompute_granularity": only(None, "full", "selective"),
    "recompute.recompute_method": READ,
    "recompute.recompute_num_layers": READ,
    "recompute.recompute_modules": inert_unless("recompute.recompute_granularity", "selective",
                                                subset_of(SELECTIVE, why="no counterpart in the adapter")),
    "recompute.distribute_saved_activations": only(False, why="Megatron-LM's TP-sharded checkpoint inputs"),
    "recompute.moe_layer_recompute": only(False, why="MoE layers are not modelled"),
    "offload.cpu_offloading": READ,
    "offload.cpu_offloading_num_layers": READ,
    "offload.fine_grained_activation_offloading": READ,
    "offload.offload_modules": inert_unless("offload.fine_grained_activation_offloading", True,
                                            subset_of(OFFLOADABLE, why="MoE modules are not modelled")),
    "offload.min_offloaded_tensor_size": READ,
    **{f"offload.{k}": only(0.0 if k.startswith("link") else 0,
                            why="a transfer timing model; save_on_cpu copies synchronously and has none")
       for k in ("link_bandwidth_gbps", "link_latency_us", "max_inflight_offloads")},
    **{f"run.{k}": READ for k in ("seed", "micro_batches", "steps", "training")},
}


def unsupported(cfg, world_sizes):
    """Why the adapter cannot run `cfg` (a resolved rcts config); None when it can."""
    if 1 not in world_sizes:
        return f"the case runs at world sizes {world_sizes}; the adapter runs one process"
    return refusal(cfg, SPEC)


class Mechanism:
    def __init__(self, cfg, style, rec):
        assert style in ("reentrant", "non_reentrant")
        self.rec, self.reentrant = rec, style == "reentrant"
        r, o = cfg["recompute"], cfg["offload"]
        # Eval is not special-cased: what PyTorch's checkpoint does under no_grad is its own.
        self.granularity = r.get("recompute_granularity")
        self.method, self.n = r.get("recompute_method"), r.get("recompute_num_layers")
        self.selective = set(r.get("recompute_modules", [])) if self.granularity == "selective" else set()
        fine = o.get("fine_grained_activation_offloading")
        self.offload = set(o.get("offload_modules", [])) if fine else set()
        self.layer_offload = o.get("cpu_offloading_num_layers", 0) if o.get("cpu_offloading") else -1
        self.min_elements = o.get("min_offloaded_tensor_size", 0)

    def checkpoint(self, fn, x, owner):
        """checkpoint(fn, x); its stored input is attributed to module `owner`. The
        reentrant form saves the input with save_for_backward (the saved-tensor hooks see
        it); the non-reentrant form keeps it in its closure, out of the hooks' sight, so
        the adapter records it itself, as what that checkpoint holds."""
        ptr = storage_ptr(x)
        self.rec.checkpoint_inputs[ptr] = owner
        fn = self.rec.under_current_path(fn)
        try:
            if not self.reentrant and torch.is_grad_enabled():
                note_save(self.rec, x, "checkpoint_input", "checkpoint_input (non-reentrant closure)", owner)
            return tc.checkpoint(fn, x, use_reentrant=self.reentrant,
                                 preserve_rng_state=not faults.active("no_preserve_rng"))
        finally:
            self.rec.checkpoint_inputs.pop(ptr, None)

    def region(self, selective_name, fn, x, offload=None):
        """One module of a layer: checkpointed when selective recompute names it, under
        save_on_cpu when fine-grained offload names it (both may apply)."""
        run = (lambda t: self.checkpoint(fn, t, self.rec.module_path())) if selective_name in self.selective else fn
        if offload in self.offload:
            with offload_hooks(self.rec, self.min_elements):
                return run(x)
        return run(x)

    def chunks(self, n_layers):
        """Full recompute: (begin, end, checkpointed) segments, rcts's plan (design §6)."""
        if self.granularity != "full":
            return [(0, n_layers, False)]
        if self.method == "uniform":
            return [(b, min(b + self.n, n_layers), True) for b in range(0, n_layers, self.n)]
        return [(i, i + 1, True) for i in range(self.n)] + ([(self.n, n_layers, False)] if self.n < n_layers else [])

    def block(self, layers, x):
        for begin, end, ckpt in self.chunks(len(layers)):
            def seg(t, begin=begin, end=end):
                for l in layers[begin:end]:
                    t = self.layer(l, t)
                return t

            x = self.checkpoint(seg, x, f"layers.{begin}") if ckpt else seg(x)
        return x

    def layer(self, l, x):
        if l.i < self.layer_offload:
            with offload_hooks(self.rec, self.min_elements):
                return l.forward(x)
        return l.forward(x)
