"""Unit tests of the PyTorch adapter that need no rcts binary: what it refuses and why,
the dump it writes reads back bit for bit, a damaged dump is an error naming the file
and the field, and PyTorch's checkpoint replays the forward's masks only while
preserve_rng_state is on (the fault switches it off), and how save_on_cpu and the
checkpoint styles compose. Run: python3 -m unittest."""
import copy
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "adapters", "pytorch"))

import torch  # noqa: E402

from rcts_pytorch import driver  # noqa: E402
from rcts_adapter_kit import dump  # noqa: E402
from rcts_pytorch.mechanisms import unsupported  # noqa: E402

H, F = 8, 32
CFG = {"model": {"num_layers": 2, "hidden_size": H, "num_attention_heads": 2, "seq_length": 4, "micro_batch_size": 2,
                 "ffn_hidden_size": F, "activation": "gelu", "attention_dropout": 0.2, "hidden_dropout": 0.2,
                 "activation_dtype": "bf16", "layernorm_epsilon": 1e-5, "add_bias_linear": True, "num_moe_experts": 0},
       "parallel": {"tensor_model_parallel_size": 1}, "recompute": {"recompute_granularity": None},
       "offload": {}, "run": {"seed": 7, "micro_batches": 2, "steps": 2, "training": True}}


def params():
    g = torch.Generator().manual_seed(0)
    shapes = {"input_layernorm.weight": (H,), "input_layernorm.bias": (H,), "attention.qkv.weight": (3 * H, H),
              "attention.qkv.bias": (3 * H,), "attention.proj.weight": (H, H), "attention.proj.bias": (H,),
              "pre_mlp_layernorm.weight": (H,), "pre_mlp_layernorm.bias": (H,), "mlp.fc1.weight": (F, H),
              "mlp.fc1.bias": (F,), "mlp.fc2.weight": (H, F), "mlp.fc2.bias": (H,)}
    return [(f"layers.{l}.{n}", torch.randn(*s, generator=g) * 0.3) for l in range(2) for n, s in shapes.items()]


def data(n):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(8, H, generator=g).bfloat16() for _ in range(n)]


def with_patch(**sections):
    c = copy.deepcopy(CFG)
    for k, v in sections.items():
        c[k].update(v)
    return c


FULL = {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}


class Unsupported(unittest.TestCase):
    def test_refuses_what_it_cannot_express_with_the_reason(self):
        self.assertIsNone(unsupported(CFG, [1]))
        self.assertIn("MoE", unsupported(with_patch(model={"num_moe_experts": 4}), [1]))
        self.assertIn("tensor_model_parallel_size", unsupported(with_patch(parallel={"tensor_model_parallel_size": 2}), [1]))
        self.assertIn("world sizes [2]", unsupported(CFG, [2]))
        self.assertIn("moe_act", unsupported(with_patch(recompute={"recompute_granularity": "selective",
                                                                   "recompute_modules": ["moe_act"]}), [1]))

    def test_fp8_is_refused_not_run_without_it(self):
        """An FP8 case must not run with FP8 silently off and pass."""
        self.assertIn("FP8 is not modelled", unsupported(with_patch(model={"fp8": "hybrid"}), [1]))

    def test_a_config_key_the_adapter_does_not_read_is_refused(self):
        self.assertEqual(unsupported(with_patch(model={"new_knob": True}), [1]),
                         "config key model.new_knob (= True) is not read by the adapter")
        self.assertIn("transfer timing model", unsupported(with_patch(offload={"link_bandwidth_gbps": 10.0}), [1]))


IMPL = {"name": "pytorch", "version": "test", "backend": "torch-cpu", "arithmetic": "pytorch",
        "generator": driver.GENERATOR}


class Dumps(unittest.TestCase):
    def write(self, d):
        out = driver.run(CFG, params(), data(4), data(4), "non_reentrant")
        impl = IMPL
        dump.write_run(d, {"case_id": "t", "run": "baseline", "role": "baseline"}, CFG, out, impl)
        return out

    def test_written_dump_reads_back_bit_for_bit(self):
        with tempfile.TemporaryDirectory() as d:
            out = self.write(d)
            back = dump.BaselineDump(d)
            self.assertEqual(back.config, CFG)
            for (n, a), (m, b) in zip(params(), back.params):
                self.assertEqual(n, m)
                self.assertTrue(torch.equal(a, b))
            for i, mb in enumerate(out["micro_batches"]):
                self.assertEqual(back.outputs[i].dtype, torch.bfloat16)
                self.assertTrue(torch.equal(mb["output"], back.outputs[i]))
                self.assertTrue(torch.equal(mb["input_grad"], back.input_grads[i]))
                self.assertEqual(mb["loss"], back.losses[i])

    def test_a_damaged_tensor_file_names_the_file_and_field(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d)
            with open(os.path.join(d, "s0.mb1.target.npy"), "r+b") as f:
                f.seek(-1, 2)
                f.write(b"\x7f")
            with self.assertRaises(dump.DumpError) as e:
                dump.BaselineDump(d)
            self.assertIn("dump.json: /micro_batches/1/target/sha256", str(e.exception))

    def test_a_missing_field_names_the_path(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d)
            path = os.path.join(d, "dump.json")
            with open(path) as f:
                m = json.load(f)
            del m["steps"][0]["params_before"]
            with open(path, "w") as f:
                json.dump(m, f)
            with self.assertRaises(dump.DumpError) as e:
                dump.BaselineDump(d)
            self.assertIn("/steps/0: missing field 'params_before'", str(e.exception))


class NotRecorded(unittest.TestCase):
    def test_side_effects_are_declared_not_recorded_not_counted_by_the_driver(self):
        """tokens_seen must be what the framework saw: the driver's own count could never fail."""
        out = driver.run(CFG, params(), data(4), data(4), "non_reentrant")
        self.assertNotIn("side_effects", out)
        self.assertIn("PyTorch's block updates no state", out["not_recorded"]["side_effects"])
        with tempfile.TemporaryDirectory() as d:
            impl = IMPL
            dump.write_run(d, {"case_id": "t", "run": "baseline", "role": "baseline"}, CFG, out, impl)
            with open(os.path.join(d, "dump.json")) as f:
                m = json.load(f)
        self.assertNotIn("side_effects", m)
        self.assertEqual(m["not_recorded"], {"side_effects": out["not_recorded"]["side_effects"]})


def with_fault(name, fn):
    os.environ["RCTS_PYTORCH_FAULT"] = name
    try:
        return fn()
    finally:
        del os.environ["RCTS_PYTORCH_FAULT"]


class Faults(unittest.TestCase):
    def run_cfg(self, cfg, style="non_reentrant"):
        return driver.run(cfg, params(), data(4), data(4), style)

    def grads_equal(self, a, b):
        return all(torch.equal(x["input_grad"], y["input_grad"]) for x, y in zip(a["micro_batches"], b["micro_batches"]))

    def test_a_draw_from_an_unrecorded_generator_fails_the_run(self):
        """The rng check must see every generator, not only the default CPU one."""
        from rcts_adapter_kit.rng import UnrecordedDraw
        with self.assertRaises(UnrecordedDraw) as e:
            with_fault("unrecorded_generator", lambda: self.run_cfg(CFG))
        self.assertIn("aten.rand", str(e.exception))

    def test_wrong_chunk_input_changes_the_gradients(self):
        cfg = with_patch(recompute=FULL)
        base = self.run_cfg(cfg)
        for style in ("reentrant", "non_reentrant"):
            self.assertFalse(self.grads_equal(base, with_fault("wrong_chunk_input", lambda: self.run_cfg(cfg, style))))

    def test_stale_offload_buffer_changes_the_gradients(self):
        cfg = with_patch(offload={"fine_grained_activation_offloading": True, "offload_modules": ["attn_norm"]})
        base = self.run_cfg(cfg)
        self.assertTrue(self.grads_equal(base, self.run_cfg(CFG)))
        self.assertFalse(self.grads_equal(base, with_fault("stale_offload_buffer", lambda: self.run_cfg(cfg))))


class SelectiveActivationCheckpointing(unittest.TestCase):
    def test_sac_recomputes_only_the_named_module_and_gives_the_baseline_bits(self):
        base = driver.run(CFG, params(), data(4), data(4), "non_reentrant")
        sel = with_patch(recompute={"recompute_granularity": "selective", "recompute_modules": ["core_attn"]})
        v = driver.run(sel, params(), data(4), data(4), "sac")
        for a, b in zip(base["micro_batches"], v["micro_batches"]):
            self.assertTrue(torch.equal(a["input_grad"], b["input_grad"]))
            self.assertEqual(a["rng_after"], b["rng_after"])
        self.assertEqual(v["counts"]["layers.0.attention.core"], {"original": 4, "recompute": 4})
        self.assertEqual(v["counts"]["layers.0.mlp"]["recompute"], 0)
        # SAC's cache holds the output of every op the policy saves (casts and adds too, not
        # only what backward needs): more than no recompute at all (docs/frameworks.md)
        self.assertGreater(v["micro_batches"][0]["saved_after_forward"], base["micro_batches"][0]["saved_after_forward"])


class Checkpointing(unittest.TestCase):
    def run_cfg(self, cfg, style):
        return driver.run(cfg, params(), data(4), data(4), style)

    def test_recompute_replays_the_forward_masks_and_gives_the_baseline_bits(self):
        base = self.run_cfg(CFG, "non_reentrant")
        for style in ("reentrant", "non_reentrant"):
            v = self.run_cfg(with_patch(recompute=FULL), style)
            fwd = [m for m in v["masks"] if m["draw"] == "forward"]
            rec = [m for m in v["masks"] if m["draw"] == "recompute"]
            # the reentrant form re-runs every draw; the non-reentrant one stops once every
            # saved tensor is back (early stop): each layer's trailing hidden dropout is not re-drawn
            trailing = [m for m in fwd if m["site"].endswith("mlp.hidden_dropout")]
            self.assertEqual(len(rec), len(fwd) - (len(trailing) if style == "non_reentrant" else 0), style)
            for r in rec:
                f = [m for m in fwd if (m["site"], m["step"], m["micro_batch"]) == (r["site"], r["step"], r["micro_batch"])]
                self.assertTrue(torch.equal(f[0]["mask"], r["mask"]), (style, r["site"]))
            for a, b in zip(base["micro_batches"], v["micro_batches"]):
                self.assertTrue(torch.equal(a["input_grad"], b["input_grad"]), style)
                self.assertEqual(a["rng_after"], b["rng_after"], style)

    def test_without_preserve_rng_state_the_recompute_draws_other_masks(self):
        os.environ["RCTS_PYTORCH_FAULT"] = "no_preserve_rng"
        try:
            v = self.run_cfg(with_patch(recompute=FULL), "non_reentrant")
        finally:
            del os.environ["RCTS_PYTORCH_FAULT"]
        fwd = {(m["site"], m["step"], m["micro_batch"]): m["mask"] for m in v["masks"] if m["draw"] == "forward"}
        differ = [m for m in v["masks"] if m["draw"] == "recompute"
                  and not torch.equal(fwd[(m["site"], m["step"], m["micro_batch"])], m["mask"])]
        self.assertTrue(differ)

    def test_save_on_cpu_moves_and_reloads_the_bytes_it_holds(self):
        base = self.run_cfg(CFG, "non_reentrant")
        v = self.run_cfg(with_patch(offload={"fine_grained_activation_offloading": True,
                                             "offload_modules": ["attn_norm", "core_attn"]}), "reentrant")
        for a, b in zip(base["micro_batches"], v["micro_batches"]):
            self.assertGreater(b["offloaded_bytes"], 0)
            self.assertEqual(b["offloaded_bytes"], b["reloaded_bytes"])
            self.assertEqual(b["saved_after_forward"] + b["host_resident_after_forward"], a["saved_after_forward"])

    def test_save_on_cpu_inside_a_non_reentrant_checkpoint_takes_what_it_would_drop(self):
        """The offload.with_full row of docs/pytorch-adapter.md: saved-tensor hooks do not compose (the
        innermost wins), so inside a non-reentrant checkpoint save_on_cpu copies to the
        host what the checkpoint recomputes; the reentrant form saves nothing there."""
        every_layer = with_patch(recompute={"recompute_granularity": "full", "recompute_method": "block",
                                            "recompute_num_layers": 2},
                                 offload={"fine_grained_activation_offloading": True,
                                          "offload_modules": ["attn_norm", "qkv_linear", "core_attn", "mlp_norm"]})
        self.assertEqual(self.run_cfg(every_layer, "reentrant")["micro_batches"][0]["offloaded_bytes"], 0)
        self.assertGreater(self.run_cfg(every_layer, "non_reentrant")["micro_batches"][0]["offloaded_bytes"], 0)


if __name__ == "__main__":
    unittest.main()
