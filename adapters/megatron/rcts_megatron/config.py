"""rcts config -> megatron-core TransformerConfig, and what the adapter cannot run.

rcts's names are TransformerConfig's (docs/megatron.md). The rest is fixed to make
Megatron compute the block of design §4 on the CPU: biases as the case says (add_bias_linear), GeLU in
its tanh form (rcts's; Megatron's default F.gelu is the erf form), no fused kernels (CUDA
only), softmax in f32, no layernorm query-key scaling, no final layernorm (rcts's block
ends at the last layer's residual), gradient_accumulation_fusion off (a CUDA kernel).

MoE layers (design §8, reference/modules/moe*.hpp) map to megatron-core's MoELayer with
SequentialMLP experts and the all-to-all token dispatcher (docs/frameworks.md, "MoE and
expert parallelism"): the router softmax before top-k without renormalising
(moe_router_pre_softmax, rcts's combine weights are the top-k probabilities), router logits
in f32 (moe_router_dtype fp32, rcts's compute type), the Switch aux loss with rcts's
coefficient; rcts's router, experts and shared experts have no biases (the MoE layer is
built with add_bias_linear off, driver.MoELayerWithoutBiases).
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
        why = moe_unsupported(m, p)
        if why:
            return why
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
        extra = sorted(set(r.get("recompute_modules", [])) - {"core_attn", "mlp", "layernorm", "moe",
                                                               "shared_experts"})
        if extra:
            return f"selective recompute of {extra}: MLA/GDN modules are not mapped"
    if p.get("sequence_parallel"):
        return ("sequence parallelism: the local spec's layernorm (WrappedTorchNorm, torch.nn.LayerNorm) refuses it "
                "(megatron/core/transformer/torch_norm.py:32 asserts not config.sequence_parallel); SP needs Transformer "
                "Engine's layernorm, which is CUDA only")
    tp = p["tensor_model_parallel_size"]
    dp = world_size // (tp * p["pipeline_model_parallel_size"])
    if dp != 1 and not m.get("num_moe_experts", 0) > 0:
        return (f"data parallelism ({dp} replicas): the adapter runs TP/SP, and the dense replicas of an EP grid "
                f"(without megatron-core's DistributedDataParallel: every replica holds the same data)")
    return None


# megatron-core 0.16.1 files behind the MoE refusals (docs/frameworks.md, "MoE and expert parallelism").
GROUPED_GEMM = ("grouped-GEMM experts (moe_grouped_gemm): the local spec's GroupedMLP asserts the grouped_gemm package "
                "(megatron/core/transformer/moe/experts.py:81, grouped_gemm_util.py: CUDA kernels) and TEGroupedMLP is "
                "Transformer Engine's; the adapter runs SequentialMLP experts only")
EXPERT_DROPOUT = ("expert dropout (moe_expert_dropout): megatron-core's experts have none (SequentialMLP runs each "
                  "expert's MLP.forward, megatron/core/transformer/mlp.py:155: fc1, activation, routing probabilities, "
                  "fc2; nothing draws from expert-parallel-rng there)")


ETP_WITH_BIASES = ("expert tensor parallelism: TransformerConfig asserts \"Bias in Moe is only supported when ETP==1\" "
                   "whenever add_bias_linear is on (megatron/core/transformer/transformer_config.py:1588), one flag for "
                   "the dense linears, which rcts's block gives biases unless model.add_bias_linear is false, and the experts, "
                   "which it never does")


def moe_unsupported(m, p):
    """Every reason the adapter cannot run an MoE config (model m, parallel p), joined; None when it can."""
    why = []
    if m.get("moe_grouped_gemm"):
        why.append(GROUPED_GEMM)
    if m.get("moe_expert_dropout", 0) > 0:
        why.append(EXPERT_DROPOUT)
    if m.get("moe_shared_expert_overlap") or m.get("overlap_moe_expert_parallel_comm"):
        why.append("shared-expert and EP communication overlap run on CUDA streams")
    if p.get("expert_tensor_parallel_size", 1) > 1:
        why.append(ETP_WITH_BIASES if m["add_bias_linear"] else
                   "expert tensor parallelism without biases: not mapped by the adapter yet (the experts' ETP shards)")
    return "MoE: " + "; ".join(why) if why else None


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
    if m.get("num_moe_experts", 0) > 0:
        kw.update(
            num_moe_experts=m["num_moe_experts"], moe_router_topk=m["moe_router_topk"],
            moe_ffn_hidden_size=m.get("moe_ffn_hidden_size") or m["ffn_hidden_size"],
            moe_shared_expert_intermediate_size=m.get("moe_shared_expert_intermediate_size") or None,
            moe_layer_freq=m.get("moe_layer_freq", 1), moe_grouped_gemm=False,
            moe_router_pre_softmax=True, moe_router_score_function="softmax", moe_router_dtype="fp32",
            moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=m.get("moe_aux_loss_coeff", 0.0),
            moe_token_dispatcher_type="alltoall", moe_permute_fusion=False,
            expert_model_parallel_size=p["expert_model_parallel_size"],
            expert_tensor_parallel_size=p["expert_tensor_parallel_size"])
    if r.get("moe_layer_recompute"):  # the deprecated alias: Megatron maps it to selective + moe itself
        kw["moe_layer_recompute"] = True
    if r.get("recompute_granularity"):  # Megatron itself skips full recompute in eval (self.training)
        kw["recompute_granularity"] = r["recompute_granularity"]
        if r["recompute_granularity"] == "full":
            kw["recompute_method"] = r["recompute_method"]
            kw["recompute_num_layers"] = r["recompute_num_layers"]
            kw["distribute_saved_activations"] = r["distribute_saved_activations"]
        else:
            kw["recompute_modules"] = list(r["recompute_modules"])
    return TransformerConfig(**kw)
