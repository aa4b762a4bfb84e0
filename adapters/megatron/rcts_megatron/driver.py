"""One run (baseline, variant or rerun) of megatron-core's TransformerBlock (local layer
spec) on this rank: steps of micro-batches, loss 0.5 * mean((y - target)^2) in f32,
gradients accumulated in f32 over a step's micro-batches (Megatron's main_grad), the TP
all-reduce of sequence-parallel parameters' gradients (what finalize_model_grads does),
then SGD w -= 2^-6 * grad on f32 master weights copied into the module (Megatron's
mixed-precision optimizer); none after the last step. Returns what a dump holds.
MoE runs (docs/frameworks.md, "MoE and expert parallelism") also dump megatron-core's
logged load-balancing losses as side effects; the dense replicas of an expert grid run
without DDP: every replica holds the same data, so DDP's averaging all-reduce of the
dense gradients would not change a bit; its 1/dp scaling of the expert gradients' sum
over expert-DP (megatron/core/distributed/distributed_data_parallel.py:261) is not done.
"""
import contextlib
import hashlib

import torch

from . import faults, modes
from .config import transformer_config
from rcts_adapter_kit.saved import RecomputeWatch

from .observe import DropoutTap, Recorder, save_hooks
from .weights import ParamMap

SGD_RATE = 2.0 ** -6


def is_moe(cfg):
    return cfg["model"].get("num_moe_experts", 0) > 0


def moe_layers(cfg):
    """Which layers are MoE: i % moe_layer_freq == 0 (rcts's rule and Megatron's for an integer freq)."""
    m = cfg["model"]
    return [is_moe(cfg) and i % m.get("moe_layer_freq", 1) == 0 for i in range(m["num_layers"])]


_MOE_CLASS = []


def moe_layer_without_biases():
    """megatron-core's MoELayer built from a copy of the config with add_bias_linear off: rcts's
    router, routed experts and shared experts have no biases (reference/modules/moe.hpp), the
    dense layers keep theirs. Nothing else of MoELayer is touched."""
    if not _MOE_CLASS:
        import copy

        from megatron.core.transformer.moe.moe_layer import MoELayer

        class MoELayerWithoutBiases(MoELayer):
            def __init__(self, config, *args, **kwargs):
                config = copy.copy(config)
                config.add_bias_linear = False
                super().__init__(config, *args, **kwargs)

        _MOE_CLASS.append(MoELayerWithoutBiases)
    return _MOE_CLASS[0]


def build_block(cfg):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlock, TransformerBlockSubmodules

    config = transformer_config(cfg)
    if is_moe(cfg):  # the local spec of each layer, MoE (SequentialMLP experts) or dense, as moe_layer_freq says
        moe_spec = get_gpt_layer_local_spec(num_experts=cfg["model"]["num_moe_experts"], moe_grouped_gemm=False)
        moe_spec.submodules.mlp.module = moe_layer_without_biases()
        spec = TransformerBlockSubmodules(
            layer_specs=[moe_spec if moe else get_gpt_layer_local_spec() for moe in moe_layers(cfg)], layer_norm=None)
    else:
        spec = get_gpt_layer_local_spec()
    block = TransformerBlock(config, spec, post_layer_norm=False)
    block.train(cfg["run"]["training"])
    return block


def aux_loss_tracker():
    """megatron-core's layer-wise aux-loss tracker (moe_utils.py: save_to_aux_losses_tracker adds
    each router's load-balancing loss / coeff to values[layer_number - 1])."""
    from megatron.core.transformer.moe.moe_utils import get_moe_layer_wise_logging_tracker
    return get_moe_layer_wise_logging_tracker()


def aux_loss_side_effects(cfg):
    """The run's side effects, from Megatron's own tracker: per MoE layer the sum over the run's
    micro-batches of what the router logged (a recompute that logged twice shows here)."""
    vals = aux_loss_tracker().get("load_balancing_loss", {}).get("values")
    return {f"layers.{i}.moe.load_balancing_loss": float(vals[i]) if vals is not None else 0.0
            for i, moe in enumerate(moe_layers(cfg)) if moe}


def rng_digests(tracker):
    """The emulated device's generator and every tracker stream, each as sha256 of its state."""
    out = {"device (torch.default_generator)": hashlib.sha256(torch.get_rng_state().numpy().tobytes()).hexdigest()}
    for name, st in sorted(tracker.get_states().items()):
        out[f"tracker.{name}"] = hashlib.sha256(st.numpy().tobytes()).hexdigest()
    return out


# The evidence rule: a check passes only on evidence the framework produced.
NO_SIDE_EFFECTS = ("megatron-core's TransformerLayer keeps no per-forward state on this path (no token counter; FP8 "
                   "amax histories are Transformer Engine's, not installed); a count the adapter's hooks kept would "
                   "be the adapter's, not Megatron's")


def seed(cfg, rank):
    """megatron-core's own seeding with this rank's TP/EP/ETP ranks. Releases before 0.13
    take no rank arguments (model_parallel_cuda_manual_seed(seed, te_rng_tracker, ...) reads
    them from parallel_state: 0.12.3 tensor_parallel/random.py:319): there the adapter checks
    that parallel_state's ranks are the dump's, and the tp_seed_without_rank fault makes
    random.get_tensor_model_parallel_rank answer 0 for the one call (ep_seed_without_rank:
    get_expert_model_parallel_rank)."""
    import inspect

    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.tensor_parallel import random as mrandom

    fault = faults.active("tp_seed_without_rank")
    ep_fault = faults.active("ep_seed_without_rank")
    fn = tensor_parallel.model_parallel_cuda_manual_seed
    if "tp_rank" in inspect.signature(fn).parameters:
        fn(cfg["run"]["seed"], tp_rank=0 if fault else rank["tp"], ep_rank=0 if ep_fault else rank["ep"],
           etp_rank=rank["etp"])
        return tensor_parallel.get_cuda_rng_tracker()
    theirs = {"tp": parallel_state.get_tensor_model_parallel_rank(),
              "ep": parallel_state.get_expert_model_parallel_rank(),
              "etp": parallel_state.get_expert_tensor_parallel_rank()}
    if any(theirs[k] != rank[k] for k in theirs):
        raise RuntimeError(f"adapter: parallel_state's ranks {theirs} are not the dump's {rank} (seeding reads them)")
    orig = mrandom.get_tensor_model_parallel_rank
    orig_ep = getattr(mrandom, "get_expert_model_parallel_rank", None)
    if fault:
        mrandom.get_tensor_model_parallel_rank = lambda: 0
    if ep_fault and orig_ep:
        mrandom.get_expert_model_parallel_rank = lambda: 0
    try:
        fn(cfg["run"]["seed"])
    finally:
        mrandom.get_tensor_model_parallel_rank = orig
        if orig_ep:
            mrandom.get_expert_model_parallel_rank = orig_ep
    return tensor_parallel.get_cuda_rng_tracker()


def run(cfg, rank, initial_params, inputs, targets):
    from megatron.core import parallel_state

    m = cfg["model"]
    s, b, h = m["seq_length"], m["micro_batch_size"], m["hidden_size"]
    tp = cfg["parallel"]["tensor_model_parallel_size"]
    sp = cfg["parallel"]["sequence_parallel"]
    steps, per, training = cfg["run"]["steps"], cfg["run"]["micro_batches"], cfg["run"]["training"]
    n_layers = m["num_layers"]
    layer_names = [f"layers.{i}" for i in range(n_layers)]

    block = build_block(cfg)
    order = [n for n, _ in initial_params]
    moe = is_moe(cfg)
    experts_per_rank = m.get("num_moe_experts", 0) // cfg["parallel"]["expert_model_parallel_size"]
    pmap = ParamMap(block, order, m["num_attention_heads"] // tp, expert_offset=rank["ep"] * experts_per_rank)
    master = {n: t.clone().float() for n, t in initial_params}
    pmap.load(master)
    rec = Recorder(cfg, {p.untyped_storage().data_ptr() for p in block.parameters()})
    rec.attach(block, layer_names)
    faults_installed = install_faults(block, cfg, rec)
    tracker = seed(cfg, rank)
    rec.tracker = tracker
    if moe:
        # rcts's aux loss is a recorded side effect with no gradient (reference/modules/moe_router.hpp):
        # Megatron computes and logs it (router.py:598) and its MoEAuxLossAutoScaler backward adds
        # main_loss_backward_scale * d(aux), the scale a training schedule sets; 0 here.
        from megatron.core.transformer.moe.moe_utils import MoEAuxLossAutoScaler, clear_aux_losses_tracker
        MoEAuxLossAutoScaler.set_loss_scale(torch.tensor(0.0))
        clear_aux_losses_tracker()
    tp_group = parallel_state.get_tensor_model_parallel_group()
    tp_rank = rank["tp"]
    rows = s // tp * b if sp else s * b
    # The causal mask as Megatron's data loader gives it (bool [1, 1, s, s], True = masked);
    # without one Megatron builds it with device="cuda" (transformer/utils.py). One tensor for
    # every layer and run, not an activation: its storage is not counted as saved.
    causal = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)[None, None]
    rec.param_storages.add(causal.untyped_storage().data_ptr())

    saves_mode = modes.saves()
    user_hook = (torch.autograd.graph.save_on_cpu if modes.user_hooks() == "save_on_cpu"
                 else contextlib.nullcontext)
    out = {"micro_batches": [], "steps": []}
    for step in range(steps):
        acc = {n: torch.zeros_like(master[n]) for n in order}
        before = [(n, master[n].clone()) for n in order]
        for mb in range(per):
            i = step * per + mb
            rec.step, rec.micro_batch = step, mb
            x_full = inputs[i]
            x = (x_full[tp_rank * rows:(tp_rank + 1) * rows] if sp else x_full).clone()
            x = x.reshape(-1, b, h).requires_grad_(training)
            rec.phase = "forward"
            if training and saves_mode == "shadow":
                saves, per_layer, held = shadow_forward(block, rec, x, causal, tracker, n_layers)
            rec.pending_chunk = None
            with torch.set_grad_enabled(training), user_hook(), \
                    save_hooks(rec) if saves_mode == "hooks" else contextlib.nullcontext(), \
                    contextlib.nullcontext() if saves_mode == "none" else DropoutTap(rec):
                y = block(hidden_states=x, attention_mask=causal)
            if not (training and saves_mode == "shadow"):
                saves, per_layer, held = rec.finish_forward(n_layers)
            y2 = y.reshape(-1, h)
            if sp:  # the block's output is the rank's sequence shard: gather the full (s*b, h)
                parts = [torch.empty_like(y2) for _ in range(tp)]
                torch.distributed.all_gather(parts, y2.detach().contiguous(), group=tp_group)
                y_full = torch.cat(parts)
            else:
                y_full = y2
            diff = y_full.detach().float() - targets[i].float()
            loss = 0.5 * (diff * diff).mean()
            watch = RecomputeWatch(rec)  # what a recompute produced, by weak reference
            if training:
                grad = (diff / diff.numel()).to(y.dtype)
                if sp:
                    grad = grad[tp_rank * rows:(tp_rank + 1) * rows]
                rec.phase = "backward"
                with contextlib.ExitStack() as observing:
                    if saves_mode != "none":
                        observing.enter_context(DropoutTap(rec))
                        observing.enter_context(watch)
                    y2.backward(grad)
                rec.phase = "forward"
                for n in order:
                    p = pmap.param(n)
                    if p.grad is not None:
                        acc[n] += pmap.to_rcts(n, p.grad)
                        p.grad = None
            del y, y2  # the adapter's own references go before the watch looks
            held_after = watch.still_held()
            out["micro_batches"].append({
                "step": step, "micro_batch": mb, "loss": float(loss),
                "input": x_full, "target": targets[i], "output": y_full.detach().to(x_full.dtype),
                "input_grad": x.grad.reshape(-1, h).clone() if training else None,
                "param_grads": [(n + ".grad", acc[n].clone()) for n in order],
                "rng_after": rng_digests(tracker), "saved_tensors": saves, "saved_bytes_per_layer": per_layer,
                "saved_after_forward": held, "host_resident_after_forward": 0, "held_after_backward": held_after})
        if sp and training:  # Megatron's finalize_model_grads: all-reduce SP parameters' grads over TP
            for n in order:
                if getattr(pmap.param(n), "sequence_parallel", False):
                    torch.distributed.all_reduce(acc[n], group=tp_group)
        out["steps"].append({"step": step, "params_before": before,
                             "grads": [(n + ".grad", acc[n].clone()) for n in order]})
        if training and step + 1 < steps:
            for n in order:
                master[n] -= acc[n] * SGD_RATE
            pmap.load(master)
    out["parameters"] = [(n, master[n].clone()) for n in order]
    out["masks"] = rec.masks
    out["counts"] = {k: {"original": v[0], "recompute": v[1]} for k, v in rec.counts.items()}
    if moe:
        out["side_effects"] = aux_loss_side_effects(cfg)
    else:
        out["not_recorded"] = {"side_effects": NO_SIDE_EFFECTS}
    uninstall_faults(faults_installed)
    return out


def shadow_forward(block, rec, x, causal, tracker, n_layers):
    """The micro-batch's forward once more, before the one megatron-core's numbers come
    from, under the kit's recording hooks (modes.py, "shadow"): same parameters, a copy of
    the input, the RNG states it started from restored after it (the device generator and
    every tracker stream). Returns finish_forward's saves as held at its end; its graph is
    dropped unused. Module counts and dropout masks are the computed forward's."""
    cpu = torch.get_rng_state()
    streams = {k: v.clone() for k, v in tracker.get_states().items()}
    aux = {k: v["values"].clone() for k, v in aux_loss_tracker().items()}  # its routers log aux losses too
    rec.shadow, rec.pending_chunk = True, None
    try:
        xs = x.detach().clone().requires_grad_(True)
        with torch.enable_grad(), save_hooks(rec):
            ys = block(hidden_states=xs, attention_mask=causal)
        found = rec.finish_forward(n_layers)  # while its graph is alive
        del ys, xs
    finally:
        rec.shadow = False
    for k, v in aux_loss_tracker().items():
        v["values"].copy_(aux[k]) if k in aux else v["values"].zero_()
    if not faults.active("shadow_rng_not_restored"):
        torch.set_rng_state(cpu)
        tracker.set_states(streams)
    return found


def install_faults(block, cfg, rec):
    """The RCTS_MEGATRON_FAULT switch (faults.py): monkeypatches around Megatron's code,
    undone after the run."""
    from megatron.core.tensor_parallel import random as mrandom

    undo = []
    if faults.active("no_rng_restore"):
        orig = mrandom._set_all_rng_states

        def no_restore(*a, **k):
            if rec.phase != "backward":
                return orig(*a, **k)

        mrandom._set_all_rng_states = no_restore
        undo.append(lambda: setattr(mrandom, "_set_all_rng_states", orig))
    if faults.active("outside_fork"):
        import contextlib
        orig_fork = mrandom.CudaRNGStatesTracker.fork

        def fork(self, name=mrandom._MODEL_PARALLEL_RNG_TRACKER_NAME):
            return contextlib.nullcontext() if rec.phase == "backward" else orig_fork(self, name)

        mrandom.CudaRNGStatesTracker.fork = fork
        undo.append(lambda: setattr(mrandom.CudaRNGStatesTracker, "fork", orig_fork))
    if faults.active("chunk_input"):
        r = cfg["recompute"]
        n = r.get("recompute_num_layers") or 1
        if r.get("recompute_granularity") == "full" and r.get("recompute_method") == "uniform":
            chunk_in = {}
            for k, layer in enumerate(block.layers):
                def pre(mod, args, kwargs, k=k):
                    hs = kwargs.get("hidden_states", args[0] if args else None)
                    if k % n == 0:
                        chunk_in["x"] = hs
                    elif "x" in chunk_in:
                        kwargs = dict(kwargs, hidden_states=chunk_in["x"])
                        args = ()
                    return args, kwargs

                undo.append(layer.register_forward_pre_hook(pre, with_kwargs=True).remove)
    if faults.active("aux_loss_counted_twice"):
        from megatron.core.transformer.moe import router
        orig_save = router.save_to_aux_losses_tracker

        def twice(*a, **k):
            orig_save(*a, **k)
            if rec.phase == "backward":
                orig_save(*a, **k)

        router.save_to_aux_losses_tracker = twice
        undo.append(lambda: setattr(router, "save_to_aux_losses_tracker", orig_save))
    if faults.active("leak_saved_tensor"):
        for layer in block.layers:
            def leak(mod, args, out):  # MLP returns (output, bias): output * 1 keeps the ones
                return (out[0] * torch.ones_like(out[0]),) + tuple(out[1:])

            undo.append(layer.mlp.register_forward_hook(leak).remove)
    if faults.active("recompute_keeps_outputs"):
        for layer in block.layers:
            for mod in (layer.self_attention.core_attention, layer.mlp, layer.input_layernorm, layer.pre_mlp_layernorm):
                def keep(m, args, out):
                    if rec.phase == "backward":
                        _KEPT.append(out)

                undo.append(mod.register_forward_hook(keep).remove)
        undo.append(_KEPT.clear)
    return undo


_KEPT = []  # the recompute_keeps_outputs fault's list: recomputed outputs outlive backward


def uninstall_faults(undo):
    for u in undo:
        u()
