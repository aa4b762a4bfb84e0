"""Unit tests of the Megatron adapter's own parts that need no megatron-core import:
the emulated device, the QKV layout, the fault switch, and the attribution of saved
tensors (observe.py over the kit's saved.py)."""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path[:0] = [os.path.join(ROOT, "adapters", "megatron"), os.path.join(ROOT, "adapters", "kit")]

import torch  # noqa: E402

from rcts_adapter_kit.errors import AdapterError  # noqa: E402
from rcts_megatron import config, cuda_shim, faults, modes, observe, weights  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "adapters", "megatron"))
import check_megatron  # noqa: E402
import one_column  # noqa: E402


class EmulatedDevice(unittest.TestCase):
    def setUp(self):
        cuda_shim.install()

    def test_cuda_rng_is_the_cpu_generator(self):
        torch.cuda.manual_seed(77)
        self.assertTrue(torch.equal(torch.cuda.get_rng_state(), torch.get_rng_state()))
        torch.manual_seed(77)
        a = torch.rand(5)
        torch.cuda.manual_seed(77)
        self.assertTrue(torch.equal(torch.rand(5), a))
        self.assertIs(torch.cuda.default_generators[0], torch.default_generator)

    def test_lazy_call_runs_now(self):
        ran = []
        torch.cuda._lazy_call(lambda: ran.append(1))
        self.assertEqual(ran, [1])

    def test_current_device_places_on_cpu(self):
        self.assertEqual(torch.empty(2, device=torch.cuda.current_device()).device.type, "cpu")

    def test_every_patched_name_is_described(self):
        for name in cuda_shim.PATCHED:
            self.assertIn(name, cuda_shim.description())

    def test_moe_stream_is_synchronous_and_described(self):
        cuda_shim.install_streams()
        side = torch.cuda.Stream()
        self.assertIsNot(torch.cuda.current_stream(), side)  # the dispatcher's "on a side stream" test
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            side.record_event().synchronize()
        for name in cuda_shim.STREAM_PATCHED:
            self.assertIn(name, cuda_shim.description())


class QkvLayout(unittest.TestCase):
    def test_per_head_interleave(self):
        heads, d = 2, 3
        rcts_rows = torch.arange(3 * heads * d)            # [q | k | v], head-major
        meg = rcts_rows[weights.qkv_perm(3 * heads * d, heads)]
        # Megatron row head*3d + part*d + j holds rcts row part*h + head*d + j
        h = heads * d
        for head in range(heads):
            for part in range(3):
                for j in range(d):
                    self.assertEqual(int(meg[head * 3 * d + part * d + j]), part * h + head * d + j)

    def test_names(self):
        self.assertEqual(weights.megatron_name("layers.3.attention.qkv.weight"), "layers.3.self_attention.linear_qkv.weight")
        self.assertEqual(weights.megatron_name("layers.1.mlp.fc2.bias"), "layers.1.mlp.linear_fc2.bias")
        self.assertEqual(weights.megatron_name("layers.0.pre_mlp_layernorm.weight"), "layers.0.pre_mlp_layernorm.weight")

    def test_moe_names(self):
        self.assertEqual(weights.megatron_name("layers.2.moe.router.weight"), "layers.2.mlp.router.weight")
        self.assertEqual(weights.megatron_name("layers.0.moe.shared_experts.fc1.weight"),
                         "layers.0.mlp.shared_experts.linear_fc1.weight")
        # rcts names experts by their global index, Megatron by the EP rank's local one
        self.assertEqual(weights.megatron_name("layers.1.moe.experts.3.fc2.weight", expert_offset=2),
                         "layers.1.mlp.experts.local_experts.1.linear_fc2.weight")
        self.assertEqual(weights.megatron_name("layers.1.moe.experts.0.fc1.weight"),
                         "layers.1.mlp.experts.local_experts.0.linear_fc1.weight")


class MoeRefusals(unittest.TestCase):
    """What megatron-core's MoE lacks on the CPU is refused with the megatron-core line, every reason at once."""

    def test_grouped_gemm_and_expert_dropout(self):
        why = config.moe_unsupported({"moe_grouped_gemm": True, "moe_expert_dropout": 0.1}, {})
        self.assertIn("experts.py:81", why)
        self.assertIn("mlp.py:155", why)

    def test_expert_tp_with_dense_biases(self):
        self.assertIn("transformer_config.py:1588",
                      config.moe_unsupported({"add_bias_linear": True}, {"expert_tensor_parallel_size": 2}))

    def test_expert_tp_without_biases_is_refused_as_not_mapped(self):
        why = config.moe_unsupported({"add_bias_linear": False}, {"expert_tensor_parallel_size": 2})
        self.assertNotIn("transformer_config.py:1588", why)
        self.assertIn("not mapped", why)

    def test_sequential_experts_without_dropout_run(self):
        self.assertIsNone(config.moe_unsupported({"moe_grouped_gemm": False, "moe_expert_dropout": 0.0},
                                                 {"expert_tensor_parallel_size": 1}))


class FaultSwitch(unittest.TestCase):
    def test_unknown_fault_refused(self):
        os.environ["RCTS_MEGATRON_FAULT"] = "no_such_fault"
        try:
            with self.assertRaises(SystemExit):
                faults.active("chunk_input")
        finally:
            del os.environ["RCTS_MEGATRON_FAULT"]

    def test_off_by_default(self):
        os.environ.pop("RCTS_MEGATRON_FAULT", None)
        self.assertFalse(any(faults.active(f) for f in faults.KNOWN))


class Releases(unittest.TestCase):
    """check-megatron --release: only a pinned release, the newest from the venv, an older
    one from its pip target, and the adapter refuses an import of another version."""

    def test_pinned_list(self):
        pinned = check_megatron.releases()
        self.assertEqual(pinned[0], "0.12.3")
        self.assertEqual(pinned, sorted(pinned, key=lambda v: tuple(map(int, v.split(".")))))

    def test_unknown_release_refused(self):
        with self.assertRaisesRegex(AdapterError, r"--release 9\.9\.9: not a release of .*releases\.txt"):
            check_megatron.release_path("9.9.9")

    def test_newest_is_the_venv(self):
        self.assertEqual(check_megatron.release_path(check_megatron.releases()[-1]), "")

    def test_missing_target_names_the_install(self):
        with tempfile.TemporaryDirectory() as d:
            old = os.environ.get("RCTS_BUILD_DIR")
            os.environ["RCTS_BUILD_DIR"] = d
            try:
                with self.assertRaisesRegex(AdapterError, r"no megatron-core at .*mcore/0\.12\.3 .*megatron-releases --install"):
                    check_megatron.release_path("0.12.3")
            finally:
                os.environ.pop("RCTS_BUILD_DIR") if old is None else os.environ.update(RCTS_BUILD_DIR=old)

    def test_imported_version_must_be_the_release(self):
        modes.check_release("", "0.16.1", "x")
        modes.check_release("0.13.1", "0.13.1", "x")
        with self.assertRaisesRegex(AdapterError, r"RCTS_MEGATRON_RELEASE=0\.13\.1: the megatron-core imported is 0\.16\.1"):
            modes.check_release("0.13.1", "0.16.1", "/venv")


class OneColumn(unittest.TestCase):
    """A release's 1- and 2-rank reports as one matrix column (scripts/framework-results)."""

    def case(self, cid, outcome, reason=""):
        return {"id": cid, "outcome": outcome, "reason": reason, "checks": []}

    def test_each_case_from_the_world_size_it_runs_at(self):
        w1 = {"header": {"ranks": 1}, "cases": [self.case("a", "pass"),
                                                self.case("t", "skip", "needs 2 ranks, this check has 1")]}
        w2 = {"header": {"ranks": 2}, "cases": [self.case("a", "skip", "needs 1 ranks, this check has 2"),
                                                self.case("t", "fail")]}
        both = one_column.merge(w1, w2)
        self.assertEqual({c["id"]: c["outcome"] for c in both["cases"]}, {"a": "pass", "t": "fail"})
        self.assertEqual(both["header"], {"ranks": 1})

    def test_a_real_result_at_both_sizes_is_refused(self):
        with self.assertRaisesRegex(ValueError, "case a has a result at both world sizes"):
            one_column.merge({"cases": [self.case("a", "pass")]}, {"cases": [self.case("a", "fail")]})

    def test_an_adapter_skip_is_kept(self):  # only rcts's "needs N ranks" skip gives way
        both = one_column.merge({"cases": [self.case("m", "skip", "MoE layers are not mapped")]}, None)
        self.assertEqual(both["cases"][0]["reason"], "MoE layers are not mapped")


class ObserveModes(unittest.TestCase):
    def test_unknown_mode_refused(self):
        for var in ("RCTS_MEGATRON_SAVES", "RCTS_MEGATRON_USER_HOOKS"):
            os.environ[var] = "bogus"
            try:
                with self.assertRaisesRegex(SystemExit, var + r"='bogus' is not one of"):
                    modes.saves() if var.endswith("SAVES") else modes.user_hooks()
            finally:
                del os.environ[var]

    def test_default_is_shadow_and_named(self):
        os.environ.pop("RCTS_MEGATRON_SAVES", None)
        os.environ.pop("RCTS_MEGATRON_USER_HOOKS", None)
        self.assertEqual((modes.saves(), modes.user_hooks()), ("shadow", ""))
        self.assertEqual(modes.description(), "saved tensors recorded: shadow")
        os.environ["RCTS_MEGATRON_USER_HOOKS"] = "save_on_cpu"
        try:
            self.assertIn("torch.autograd.graph.save_on_cpu", modes.description())
        finally:
            del os.environ["RCTS_MEGATRON_USER_HOOKS"]


class SavedTensors(unittest.TestCase):
    """Megatron's rule over the kit's hooks: a save outside every layer is the input a
    checkpoint saves after running its first layer; bytes are the tensors' at the end of
    the forward."""

    def test_checkpoint_inputs_and_end_of_forward_bytes(self):
        mask = torch.ones(4, dtype=torch.bool)
        rec = observe.Recorder({}, {mask.untyped_storage().data_ptr()})
        x, y = torch.ones(2, 8), torch.ones(3)
        with observe.save_hooks(rec):
            rec.pending_chunk = "layers.1"
            mask.float().requires_grad_().mul(mask)   # a parameter-like save outside the layers takes no chunk
            x.requires_grad_().sin()                   # the chunk's input
            rec.path = ["layers.0", "layers.0.mlp"]
            z = y.requires_grad_().exp()                # saves its result, freed before the forward ends
            z.untyped_storage().resize_(0)
            saves, per_layer, held = rec.finish_forward(2)
        self.assertEqual([(s["module"], s["category"], s["op"], s["bytes"]) for s in saves],
                         [("layers.1", "checkpoint_input", observe.CHECKPOINT_OP, 64),
                          ("layers.0.mlp", "saved_activation", "aten::exp", 0)])
        self.assertEqual((per_layer, held), ([0, 64], 64))
        self.assertEqual((saves[0]["dtype"], saves[0]["shape"]), ("f32", [2, 8]))
        self.assertNotIn("shape", saves[1])  # a freed save has no shape: a dump's bytes are its shape's
        self.assertEqual(rec.saves, [])


if __name__ == "__main__":
    unittest.main()
