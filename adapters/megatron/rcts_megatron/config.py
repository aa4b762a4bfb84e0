"""rcts config -> megatron-core TransformerConfig, and what the adapter cannot run.

rcts's names are TransformerConfig's (docs/megatron.md). The rest is fixed to make
Megatron compute the block of design §4 on the CPU: biases as the case says (add_bias_linear), GeLU in
its tanh form (rcts's; Megatron's default F.gelu is the erf form), no fused kernels (CUDA
only), softmax in f32, no layernorm query-key scaling, no final layernorm (rcts's block
ends at the last layer's residual), gradient_accumulation_fusion off (a CUDA kernel).
"""
import functools

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def unsupported(cfg, world_size):
    """Why the adapter cannot run `cfg` (a resolved rcts config); None when it can."""
    m, p, r, o = cfg["model"], cfg["parallel"], cfg["recompute"], cfg["offload"]
    if m["activation_dtype"] not in DTYPES:
        return f"activation dtype {m['activation_dtype']}: megatron-core trains in f32, bf16 or fp16"
    if m.get("num_moe_experts", 0) > 0:
        return "MoE layers are not mapped by the adapter yet (dense layers only)"
    if m.get("multi_latent_attention") or m.get("gated_delta_net"):
        return "MLA and GDN layers are not mapped by the adapter"
    if m.get("fp8"):
        return "FP8 needs Transformer Engine (CUDA only)"
    if m.get("cuda_graph_impl", "none") != "none":
        return "CUDA graphs need a GPU"
    if m.get("activation") not in ("gelu", "swiglu"):
        return f"activation '{m.get('activation')}' is not mapped (GeLU, SwiGLU only)"
    if p["pipeline_model_parallel_size"] != 1:
        return "pipeline parallelism: Megatron's schedules are not driven by the adapter (one block per rank)"
    if o.get("fine_grained_activation_offloading"):
        return ("fine-grained activation offload needs CUDA streams, events and pinned memory "
                "(megatron/core/pipeline_parallel/fine_grained_activation_offload.py: torch.cuda.Stream, "
                "torch.cuda.Event): not emulated")
    if o.get("cpu_offloading"):
        return "layer-level cpu_offloading is Transformer Engine's get_cpu_offload_context (not installed)"
    if r.get("recompute_granularity") == "selective":
        extra = sorted(set(r.get("recompute_modules", [])) - {"core_attn", "mlp", "layernorm"})
        if extra:
            return f"selective recompute of {extra}: MoE/MLA modules are not mapped"
    if p.get("sequence_parallel"):
        return ("sequence parallelism: the local spec's layernorm (WrappedTorchNorm, torch.nn.LayerNorm) refuses it "
                "(megatron/core/transformer/torch_norm.py:32 asserts not config.sequence_parallel); SP needs Transformer "
                "Engine's layernorm, which is CUDA only")
    tp = p["tensor_model_parallel_size"]
    dp = world_size // (tp * p["pipeline_model_parallel_size"])
    if dp != 1:
        return f"data parallelism ({dp} replicas): the adapter runs TP/SP only"
    return None


def transformer_config(cfg):
    from megatron.core.transformer.transformer_config import TransformerConfig

    m, p, r = cfg["model"], cfg["parallel"], cfg["recompute"]
    dtype = DTYPES[m["activation_dtype"]]
    swiglu = m["activation"] == "swiglu"
    kw = dict(
        num_layers=m["num_layers"], hidden_size=m["hidden_size"], num_attention_heads=m["num_attention_heads"],
        ffn_hidden_size=m["ffn_hidden_size"], hidden_dropout=m["hidden_dropout"],
        attention_dropout=m["attention_dropout"], layernorm_epsilon=m["layernorm_epsilon"],
        add_bias_linear=m["add_bias_linear"], gated_linear_unit=swiglu,
        activation_func=F.silu if swiglu else functools.partial(F.gelu, approximate="tanh"),
        bias_activation_fusion=False, bias_dropout_fusion=False, masked_softmax_fusion=False,
        apply_query_key_layer_scaling=False, attention_softmax_in_fp32=True, persist_layer_norm=False,
        gradient_accumulation_fusion=False, use_cpu_initialization=True, perform_initialization=False,
        params_dtype=dtype, bf16=dtype == torch.bfloat16,
        tensor_model_parallel_size=p["tensor_model_parallel_size"], sequence_parallel=p["sequence_parallel"],
        pipeline_model_parallel_size=p["pipeline_model_parallel_size"],
    )
    if r.get("recompute_granularity"):  # Megatron itself skips full recompute in eval (self.training)
        kw["recompute_granularity"] = r["recompute_granularity"]
        if r["recompute_granularity"] == "full":
            kw["recompute_method"] = r["recompute_method"]
            kw["recompute_num_layers"] = r["recompute_num_layers"]
            kw["distribute_saved_activations"] = r["distribute_saved_activations"]
        else:
            kw["recompute_modules"] = list(r["recompute_modules"])
    return TransformerConfig(**kw)
