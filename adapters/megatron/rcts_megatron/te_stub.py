"""Import stubs for the three Transformer Engine names megatron-core's
CheckpointWithoutOutput reaches even without FP8.

megatron/core/tensor_parallel/random.py imports FP8GlobalStateManager,
activation_recompute_forward and fp8_autocast from transformer_engine inside a try; when
TE is missing the names stay undefined. CheckpointWithoutOutput.__init__ sets
`self.fp8 = fp8 is not None`, true for the default fp8=False (random.py:636 in 0.16.1,
kept on purpose upstream), so every output-discarding recompute (selective "layernorm")
takes the TE path and raises NameError (random.py:589) on a machine without TE. The stubs
behave as TE does with FP8 off: no FP8 is enabled, the recompute-phase markers and the
autocast are empty contexts. They are set only where the name is missing and
CheckpointWithoutOutput has an FP8 path (from 0.13: 0.12.3's takes no fp8 argument), and
listed in every dump's implementation string.

One more for MoE: megatron/core/transformer/moe/moe_utils.py imports te_general_gemm from
Megatron's TE extension inside a try whose except sets only HAVE_TE (0.16.1: :22-39), and
RouterGatingLinearFunction reads the name (:1192 `if te_general_gemm is not None`), so
every router forward raises NameError without TE. The stub is the None that test expects
(the router then runs torch.mm in router_dtype); set only where the name is missing.
"""
import contextlib

STUBBED = ("FP8GlobalStateManager", "activation_recompute_forward", "fp8_autocast")
MOE_STUBBED = ("te_general_gemm",)


class _FP8GlobalStateManager:
    @staticmethod
    def is_fp8_enabled():
        return False

    @staticmethod
    def get_fp8_recipe():
        return None


def install():
    import inspect

    from megatron.core.tensor_parallel import random as mrandom

    done = []
    try:
        from megatron.core.transformer.moe import moe_utils
    except ImportError:
        moe_utils = None
    gating = getattr(moe_utils, "RouterGatingLinearFunction", None)
    if gating is not None and "te_general_gemm" in inspect.getsource(gating) and not hasattr(moe_utils, "te_general_gemm"):
        moe_utils.te_general_gemm = None
        done.append("megatron.core.transformer.moe.moe_utils.te_general_gemm")
    if "fp8" not in inspect.signature(mrandom.CheckpointWithoutOutput.__init__).parameters:
        return done  # megatron-core 0.12: CheckpointWithoutOutput has no FP8 path, needs no TE name
    stand_ins = {"FP8GlobalStateManager": _FP8GlobalStateManager,
                 "activation_recompute_forward": lambda **kw: contextlib.nullcontext(),
                 "fp8_autocast": lambda **kw: contextlib.nullcontext()}
    for name in STUBBED:
        if not hasattr(mrandom, name):
            setattr(mrandom, name, stand_ins[name])
            done.append(f"megatron.core.tensor_parallel.random.{name}")
    return done


def description(done):
    return ("import stubs (no Transformer Engine): " + ", ".join(done)) if done else "import stubs: none"
