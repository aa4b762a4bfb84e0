"""Reading a resolved rcts config the strict way: an adapter declares every config key it
models and which values it can run; any other key, or a value it cannot run, refuses the
case with the reason (the case is skipped, never run as something else).

    SPEC = {
        "model.hidden_size": READ,                               # modelled for any value
        "model.fp8": only(None, why="FP8 is not modelled"),     # modelled for these values
        "model.kv_lora_rank": inert_unless("model.multi_latent_attention", True),
    }
    why = refusal(cfg, SPEC)   # None when the adapter models every key of cfg

A key rcts adds later is refused until the adapter names it (the test of the rule)."""

READ = ("read",)


class only:
    """The key is modelled for these values only; any other value refuses the case."""

    def __init__(self, *values, why=None):
        self.values, self.why = values, why

    def refuse(self, key, value, cfg):
        if any(value == v and type(value) is type(v) for v in self.values):
            return None
        allowed = ", ".join(repr(v) for v in self.values)
        return f"{key} = {value!r}: " + (self.why or f"the adapter models only {allowed}")


class subset_of:
    """A list-valued key modelled when every element is one of `values`."""

    def __init__(self, values, why=None):
        self.values, self.why = set(values), why

    def refuse(self, key, value, cfg):
        if not isinstance(value, list):
            return f"{key} = {value!r}: not a list"
        extra = sorted(set(value) - self.values)
        if extra:
            return f"{key} = {value!r}: " + (self.why or f"{extra} not modelled (only {sorted(self.values)})")
        return None


class inert_unless:
    """The key has no effect unless `other` has value `when` (a value or a predicate); then
    `rule` (default: refuse) judges it. E.g. MLA sizes while multi_latent_attention is false."""

    def __init__(self, other, when, rule=None, why=None):
        self.other, self.when, self.rule, self.why = other, when, rule, why

    def refuse(self, key, value, cfg):
        on = lookup(cfg, self.other)
        on = self.when(on) if callable(self.when) else on == self.when
        if on and self.rule is not None:
            return None if self.rule is READ else self.rule.refuse(key, value, cfg)
        if on:
            return f"{key} = {value!r}: " + (self.why or f"not modelled when {self.other} = {lookup(cfg, self.other)!r}")
        return None


def lookup(cfg, dotted):
    v = cfg
    for part in dotted.split("."):
        v = v[part]
    return v


def flatten(cfg, prefix=""):
    """{"model.hidden_size": 16, ...}: the leaves of the config's sections."""
    out = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def refusal(cfg, spec):
    """Why the adapter cannot run `cfg`: the first key (in sorted order) it does not read or
    whose value it does not model, the switches before the keys they make inert (so
    num_moe_experts = 4 is the reason, not a MoE size); None when it models them all."""
    leaves = sorted(flatten(cfg).items())
    for key, value in leaves:
        if key not in spec:
            return f"config key {key} (= {value!r}) is not read by the adapter"
    for inert in (False, True):
        for key, value in leaves:
            rule = spec[key]
            if rule is READ or isinstance(rule, inert_unless) != inert:
                continue
            why = rule.refuse(key, value, cfg)
            if why:
                return why
    return None


_ONE_PROCESS = "the adapter runs one process (no tensor/pipeline/expert parallelism)"

# The rules of a dense block in one process with none of rcts's optional features: every
# key of rcts's resolved config (reference/config/config_json.cpp) but the block's sizes,
# activation, dtype, recompute and offload choices, which each adapter states itself.
# An adapter starts from it (SPEC = {**DENSE_ONE_PROCESS, ...}) and names what it models
# beyond it; a feature rcts adds later is refused until some rule names its key.
DENSE_ONE_PROCESS = {
    **{f"model.{k}": READ for k in ("num_layers", "hidden_size", "num_attention_heads", "seq_length",
                                    "micro_batch_size", "ffn_hidden_size", "attention_dropout", "hidden_dropout",
                                    "layernorm_epsilon")},
    "model.add_bias_linear": only(True, why="the adapter's linears always carry biases"),
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
    "recompute.distribute_saved_activations": only(False, why="Megatron-LM's TP-sharded checkpoint inputs"),
    "recompute.moe_layer_recompute": only(False, why="MoE layers are not modelled"),
    "offload.cpu_offloading": only(False, why="offload is not modelled"),
    "offload.cpu_offloading_num_layers": inert_unless("offload.cpu_offloading", True),
    "offload.fine_grained_activation_offloading": only(False, why="offload is not modelled"),
    "offload.offload_modules": inert_unless("offload.fine_grained_activation_offloading", True),
    "offload.min_offloaded_tensor_size": READ,
    **{f"offload.{k}": only(0.0 if k.startswith("link") else 0,
                            why="a transfer timing model; the adapter has none")
       for k in ("link_bandwidth_gbps", "link_latency_us", "max_inflight_offloads")},
    **{f"run.{k}": READ for k in ("seed", "micro_batches", "steps", "training")},
}

