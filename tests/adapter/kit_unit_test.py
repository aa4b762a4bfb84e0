"""Unit tests of the adapter kit (adapters/kit) with hand-written inputs: the config
refusal rule, the Megatron-LM name table and QKV permutation (from docs/dump-format.md,
not from the code), the strict case reader, and the generator guard. Run: python -m unittest."""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "adapters", "kit"))

import torch  # noqa: E402

import numpy as np  # noqa: E402

from rcts_adapter_kit import names  # noqa: E402
from rcts_adapter_kit.dump import DumpError, Json, _read_tensor  # noqa: E402
from rcts_adapter_kit.case import Case  # noqa: E402
from rcts_adapter_kit.config import READ, inert_unless, only, refusal, subset_of  # noqa: E402
from rcts_adapter_kit.errors import AdapterError, raised_in  # noqa: E402
from rcts_adapter_kit.rng import Generators, UnrecordedDraw  # noqa: E402

SPEC = {"model.hidden_size": READ, "model.fp8": only(None, why="no FP8"),
        "model.fp8_margin": inert_unless("model.fp8", lambda v: v is not None),
        "model.flash": only(False),
        "recompute.recompute_granularity": only(None, "selective"),
        "recompute.recompute_modules": inert_unless("recompute.recompute_granularity", "selective",
                                                    subset_of({"mlp", "core_attn"}))}
CFG = {"model": {"hidden_size": 16, "fp8": None, "fp8_margin": 3, "flash": False},
       "recompute": {"recompute_granularity": None, "recompute_modules": ["moe_act"]}}


def patched(section, **kv):
    c = json.loads(json.dumps(CFG))
    c[section].update(kv)
    return c


class RaisedIn(unittest.TestCase):
    """A framework raise is reported at the innermost line inside that framework's package."""

    def test_names_the_innermost_frame_below_the_package(self):
        with tempfile.TemporaryDirectory() as d:
            pkg = os.path.join(d, "fakework", "core")
            os.makedirs(pkg)
            with open(os.path.join(pkg, "layer.py"), "w") as f:
                f.write("def inner():\n    raise IndexError('x')\n\n\ndef outer():\n    inner()\n")
            ns = {}
            exec(compile(open(os.path.join(pkg, "layer.py")).read(), os.path.join(pkg, "layer.py"), "exec"), ns)
            try:
                ns["outer"]()
            except IndexError as e:
                self.assertEqual(raised_in(e, "fakework"), ("core/layer.py", 2))
                self.assertIsNone(raised_in(e, "core2"))

    def test_a_package_directory_skips_an_adapter_path_holding_the_name(self):
        # The framework calls the adapter's code, which raises: adapters/deepspeed/... holds
        # "/deepspeed/" too, so by name the adapter's frame would be taken for the
        # framework's; by the package's directory only the framework's frames count.
        with tempfile.TemporaryDirectory() as d:
            files = {os.path.join(d, "site", "fakework", "api.py"): "def call(cb):\n    cb()\n",
                     os.path.join(d, "adapters", "fakework", "cb.py"): "def cb():\n    raise IndexError('x')\n"}
            ns = {}
            for path, text in files.items():
                os.makedirs(os.path.dirname(path))
                exec(compile(text, path, "exec"), ns)
            try:
                ns["call"](ns["cb"])
            except IndexError as e:
                self.assertEqual(raised_in(e, "fakework"), ("cb.py", 2))  # the adapter's frame, by name
                self.assertEqual(raised_in(e, os.path.join(d, "site", "fakework")), ("api.py", 2))
                self.assertIsNone(raised_in(e, os.path.join(d, "elsewhere", "fakework")))


class Config(unittest.TestCase):
    def test_every_key_modelled_runs(self):
        self.assertIsNone(refusal(CFG, SPEC))

    def test_a_key_the_adapter_does_not_read_is_refused(self):
        self.assertEqual(refusal(patched("model", new_knob=1), SPEC),
                         "config key model.new_knob (= 1) is not read by the adapter")

    def test_a_value_outside_the_modelled_ones_is_refused_with_the_reason(self):
        self.assertEqual(refusal(patched("model", fp8="hybrid"), SPEC), "model.fp8 = 'hybrid': no FP8")
        # inert keys come alive with their switch: sorted order reports fp8 itself first
        self.assertIn("model.fp8 = 'e4m3'", refusal(patched("model", fp8="e4m3"), SPEC))

    def test_types_are_strict(self):
        self.assertIn("model.flash = 0", refusal(patched("model", flash=0), SPEC))

    def test_inert_keys_and_list_values(self):
        sel = patched("recompute", recompute_granularity="selective")
        self.assertIn("['moe_act'] not modelled", refusal(sel, SPEC))
        sel["recompute"]["recompute_modules"] = ["mlp"]
        self.assertIsNone(refusal(sel, SPEC))


class Names(unittest.TestCase):
    def test_megatron_names_of_the_documented_table(self):
        table = {  # docs/dump-format.md, "Parameter names"
            "layers.0.input_layernorm.weight": "decoder.layers.0.input_layernorm.weight",
            "layers.1.attention.qkv.bias": "decoder.layers.1.self_attention.linear_qkv.bias",
            "layers.2.attention.proj.weight": "decoder.layers.2.self_attention.linear_proj.weight",
            "layers.0.pre_mlp_layernorm.bias": "decoder.layers.0.pre_mlp_layernorm.bias",
            "layers.3.mlp.fc1.weight": "decoder.layers.3.mlp.linear_fc1.weight",
            "layers.3.mlp.fc2.bias": "decoder.layers.3.mlp.linear_fc2.bias",
            "layers.0.moe.router.weight": "decoder.layers.0.mlp.router.weight",
            "layers.1.moe.experts.7.fc2.weight": "decoder.layers.1.mlp.experts.local_experts.7.linear_fc2.weight",
            "layers.1.moe.shared_experts.fc1.weight": "decoder.layers.1.mlp.shared_experts.linear_fc1.weight",
        }
        for ours, theirs in table.items():
            self.assertEqual(names.megatron_name(ours), theirs)
            self.assertEqual(names.rcts_name(theirs), ours)
        self.assertIsNone(names.megatron_name("embedding.weight"))
        self.assertIsNone(names.rcts_name("decoder.final_layernorm.weight"))

    def test_qkv_permutation(self):
        # h = 4, 2 heads (d = 2): rcts rows q0..q3 k0..k3 v0..v3 (head-major inside each);
        # Megatron: head 0 [q q k k v v], head 1 [q q k k v v]
        self.assertEqual(names.qkv_rows_to_megatron(4, 2), [0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11])
        fwd, inv = names.qkv_rows_to_megatron(4, 2), names.qkv_rows_from_megatron(4, 2)
        self.assertEqual([fwd[i] for i in inv], list(range(12)))


class CaseFile(unittest.TestCase):
    def load(self, obj):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(obj, f) if not isinstance(obj, str) else f.write(obj)
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_errors_name_the_file_and_field(self):
        for obj, want in [("{", "not JSON"), ([], "/: a case is a JSON object"),
                          ({"description": "d"}, "/: missing field 'id'"),
                          ({"id": 3}, "/id: 3 is not a string"),
                          ({"id": "a", "rank": [1]}, "/: unknown key 'rank'"),
                          ({"id": "a", "ranks": [0]}, "/ranks: [0] is not a non-empty list")]:
            path = self.load(obj)
            with self.assertRaises(AdapterError) as e:
                Case(path)
            self.assertIn(path, str(e.exception))
            self.assertIn(want, str(e.exception))

    def test_unmodelled_case_keys(self):
        c = Case(self.load({"id": "a", "seed_ranks": {"tp": 3}}))
        self.assertIn("case key seed_ranks", c.unmodelled(("id",)))
        self.assertIsNone(c.unmodelled(("id", "seed_ranks")))


class Judge(unittest.TestCase):
    """rcts_adapter_kit.judge: rcts (RCTS_BIN) judges, the driver only reads its report."""
    ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

    def setUp(self):
        self.rcts = os.environ.get("RCTS_BIN", "")
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(self.tmp, ignore_errors=True))

    def expectation(self, entries):
        path = os.path.join(self.tmp, "e.json")
        with open(path, "w") as f:
            json.dump({"format": "rcts-expectations", "version": 1, "implementation": "pytorch-reentrant",
                       "implementation_version": "test", "entries": entries}, f)
        return path

    def test_prepare_out_never_deletes_what_the_driver_did_not_write(self):
        from rcts_adapter_kit.judge import prepare_out
        out = os.path.join(self.tmp, "out")
        os.makedirs(os.path.join(out, "mine"))
        with open(os.path.join(out, "precious"), "w") as f:
            f.write("x")
        with self.assertRaises(AdapterError) as e:
            prepare_out(out, ["mine"], ".mark", "tool")
        self.assertIn(f"--out {out}: a non-empty directory tool did not make", str(e.exception))
        self.assertTrue(os.path.isdir(os.path.join(out, "mine")))
        os.unlink(os.path.join(out, "precious"))
        os.rmdir(os.path.join(out, "mine"))
        prepare_out(out, ["mine"], ".mark", "tool")  # empty: taken, and marked
        os.makedirs(os.path.join(out, "mine"))
        os.makedirs(os.path.join(out, "keep"))
        prepare_out(out, ["mine"], ".mark", "tool")  # marked: only the owned names are replaced
        self.assertFalse(os.path.exists(os.path.join(out, "mine")))
        self.assertTrue(os.path.isdir(os.path.join(out, "keep")))

    @unittest.skipUnless(os.environ.get("RCTS_BIN"), "RCTS_BIN names no rcts binary")
    def test_verdicts_are_rcts_checks(self):
        from rcts_adapter_kit.judge import rcts_check
        dumps = os.path.join(self.tmp, "dumps")
        from rcts_adapter_kit.dump import ERRORED, SKIPPED, mark_case
        mark_case(dumps, "moe.ep1", SKIPPED, "dense only")
        cases = [os.path.join(self.ROOT, "cases", "moe", "ep1.json"),
                 os.path.join(self.ROOT, "cases", "rng", "attention_dropout_only.json")]
        e = self.expectation([{"case": "moe.*", "outcome": "skip", "skip_reason": "*: dense only", "reason": "dense only"}])
        j = rcts_check(self.rcts, dumps, os.path.join(self.tmp, "r.json"), cases, e)
        self.assertEqual(j.case("moe.ep1")[3], "expected-skip")
        # Not dumped, and no entry: rcts says unexpected-skip and exits 1.
        self.assertEqual(j.case("rng.attention_dropout_only")[3], "unexpected-skip")
        self.assertEqual(j.returncode, 1)
        self.assertIn("UNEXPECTED-SKIP", j.expectations_text().upper())
        e = self.expectation([{"case": "moe.*", "outcome": "skip", "skip_reason": "*: dense only", "reason": "dense only"},
                              {"case": "rng.attention_dropout_only", "outcome": "skip", "skip_reason": "not dumped: *",
                               "reason": "not run"}])
        j = rcts_check(self.rcts, dumps, os.path.join(self.tmp, "r.json"), cases, e)
        self.assertEqual((j.returncode, j.case("rng.attention_dropout_only")[3]), (0, "expected-skip"))
        # The framework raised: the marker replaces the skip, and the skip entry does not absorb it.
        mark_case(dumps, "moe.ep1", ERRORED, "megatron-core raised: run 'full': IndexError: index 3\x1b[0m")
        self.assertEqual(os.listdir(os.path.join(dumps, "moe.ep1")), ["ERRORED"])
        j = rcts_check(self.rcts, dumps, os.path.join(self.tmp, "r.json"), cases, e)
        self.assertEqual((j.returncode, j.case("moe.ep1")[0], j.case("moe.ep1")[3]), (1, "error", "regression"))
        e = self.expectation([{"case": "moe.*", "outcome": "error", "error_reason": "*IndexError: index 3*",
                               "reason": "raises"},
                              {"case": "rng.attention_dropout_only", "outcome": "skip", "skip_reason": "not dumped: *",
                               "reason": "not run"}])
        j = rcts_check(self.rcts, dumps, os.path.join(self.tmp, "r.json"), cases, e)
        self.assertEqual((j.returncode, j.case("moe.ep1")[3]), (0, "expected-error"))
        # A refused expectation file is bad input, named by rcts.
        e = self.expectation([{"case": "moe.*", "outcome": "maybe", "reason": "r"}])
        with self.assertRaises(AdapterError) as err:
            rcts_check(self.rcts, dumps, os.path.join(self.tmp, "r.json"), cases, e)
        self.assertIn("/entries/0/outcome", str(err.exception))


class KitDump(unittest.TestCase):
    """rcts_adapter_kit.dump reads a tensor only when its file agrees with its manifest
    entry: shape, dtype and sha256, each refused naming the file and the field."""

    def test_a_tensor_file_must_agree_with_its_entry(self):
        import hashlib
        import numpy as np
        from rcts_adapter_kit.dump import DumpError, Json, _read_tensor
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        a = np.arange(6, dtype="<f4").reshape(2, 3)
        np.save(os.path.join(d, "t.npy"), a)
        good = {"file": "t.npy", "dtype": "f32", "shape": [2, 3], "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
        t = _read_tensor(d, Json("m.json", good, "/x"))
        self.assertEqual(t.tolist(), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
        path = os.path.join(d, "t.npy")
        for key, value, want in [
                ("shape", [3, 2], f"m.json: /x/shape: tensor file {path} has shape [2, 3]"),
                ("shape", [6], f"m.json: /x/shape: tensor file {path} has shape [2, 3]"),
                ("sha256", "0" * 64,
                 f"m.json: /x/sha256: tensor file {path} has another sha256 (changed after the manifest was written)"),
                ("dtype", "f64", f"m.json: /x/dtype: tensor file {path} holds '<f4', dtype f64 is stored as '<f8'")]:
            entry = dict(good, **{key: value})
            with self.assertRaises(DumpError) as e:
                _read_tensor(d, Json("m.json", entry, "/x"))
            self.assertEqual(str(e.exception), want)


class Strict(unittest.TestCase):
    def test_strict_is_passed_to_rcts(self):
        """rcts_check hands --expect-strict to rcts when asked: the driver never judges."""
        from rcts_adapter_kit.judge import rcts_check
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        stub, argv = os.path.join(d, "rcts"), os.path.join(d, "argv")
        with open(stub, "w") as f:  # an rcts that records its arguments
            f.write(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {argv}\n")
        os.chmod(stub, 0o755)
        for strict, tail in [(True, ["--expect", "e.json", "--expect-strict"]), (False, ["--expect", "e.json"])]:
            rcts_check(stub, "dumps", os.path.join(d, "r.json"), expect="e.json", strict=strict)
            with open(argv) as f:
                self.assertEqual(f.read().split("\n")[:-1], ["check", "dumps", "--json", os.path.join(d, "r.json")] + tail)


class Guard(unittest.TestCase):
    def test_the_digest_is_of_the_state_after_the_draws(self):
        import hashlib
        g = Generators()
        before = g.digest()
        self.assertEqual(before, {"torch.default_cpu_generator":
                                  hashlib.sha256(torch.default_generator.get_state().numpy().tobytes()).hexdigest()})
        torch.rand(3)
        self.assertNotEqual(g.digest(), before)

    def test_draws_from_recorded_generators_are_counted(self):
        g = Generators()
        with g.guard():
            torch.rand(3)
            torch.native_dropout(torch.ones(4), 0.5, True)
        g.check()
        self.assertEqual(g.draws["torch.default_cpu_generator"], 2)

    def test_a_draw_from_an_unrecorded_generator_fails_the_run(self):
        g, other = Generators(), torch.Generator().manual_seed(1)
        with g.guard():
            torch.rand(3, generator=other)
        with self.assertRaises(UnrecordedDraw) as e:
            g.check()
        self.assertIn("aten.rand", str(e.exception))

    def test_a_named_extra_generator_is_recorded(self):
        other = torch.Generator().manual_seed(1)
        g = Generators({"cpu": torch.default_generator, "extra": other})
        with g.guard():
            torch.rand(3, generator=other)
        g.check()
        self.assertEqual(g.draws["extra"], 1)
        self.assertEqual(set(g.digest()), {"cpu", "extra"})


def tiny_run(**mb_extra):
    """A hand-made recorded run for write_run: one micro-batch, one step, two masks (one
    naming its own stream, one not), parameters under rcts's names."""
    t = torch.arange(4, dtype=torch.float32).reshape(2, 2)
    params = [("layers.0.attention.qkv.weight", t), ("layers.0.mlp.fc1.bias", t[0])]
    mask = {"kind": "hidden", "step": 0, "micro_batch": 0, "draw": "forward", "p": 0.1,
            "mask": torch.ones(2, 2, dtype=torch.uint8)}
    return {"micro_batches": [dict({"step": 0, "micro_batch": 0, "loss": 0.5, "input": t, "target": t, "output": t,
                                    "input_grad": None, "param_grads": [], "rng_after": {"cpu": "0" * 64},
                                    "saved_tensors": [], "saved_bytes_per_layer": [0]}, **mb_extra)],
            "steps": [{"step": 0, "params_before": params, "grads": []}], "parameters": params,
            "masks": [dict(mask, site="layers.0.mlp.hidden_dropout", stream="model-parallel-rng"),
                      dict(mask, site="layers.0.attention.hidden_dropout")],
            "counts": {}, "not_recorded": {"side_effects": "none in this block"}}


class WriteRun(unittest.TestCase):
    """rcts_adapter_kit.dump.write_run: the one writer every adapter's dumps go through."""
    IMPL = {"name": "megatron-lm", "version": "test", "backend": "megatron-cpu", "arithmetic": "megatron-core",
            "generator": "cpu"}

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(self.dir))

    def write(self, out=None, impl=None, run="baseline"):
        from rcts_adapter_kit.dump import write_run
        d = os.path.join(self.dir, run)
        write_run(d, {"case_id": "t", "run": run, "role": "baseline"}, {}, out or tiny_run(), impl or self.IMPL)
        with open(os.path.join(d, "dump.json")) as f:
            return json.load(f)

    def refused(self, want, out=None, impl=None):
        with self.assertRaises(DumpError) as e:
            self.write(out, impl, run="refused")
        self.assertIn(want, str(e.exception))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "refused")), "nothing is written for a refused run")

    def test_a_mask_keeps_its_own_stream_else_the_generator(self):
        m = self.write()
        self.assertEqual([k["stream"] for k in m["masks"]], ["model-parallel-rng", "cpu"])
        self.refused("mask 1 (layers.0.attention.hidden_dropout) names no stream",
                     impl={k: v for k, v in self.IMPL.items() if k != "generator"})

    def test_the_declared_arithmetic_is_written(self):
        impl = self.write()["implementation"]
        self.assertEqual((impl["name"], impl["arithmetic"], impl["rng_states"], impl["mask_rule"]),
                         ("megatron-lm", "megatron-core", "opaque", "none"))
        self.refused("implementation 'arithmetic' must be declared",
                     impl={k: v for k, v in self.IMPL.items() if k != "arithmetic"})
        self.refused("implementation rng_states 'seed-offset': the kit writes only 'opaque'",
                     impl=dict(self.IMPL, rng_states="seed-offset"))

    def test_not_recorded_is_one_of_the_format_keys_with_a_reason(self):
        m = self.write()
        self.assertEqual(m["not_recorded"], {"side_effects": "none in this block"})
        self.assertNotIn("side_effects", m)
        self.refused("not_recorded 'saved_tensors' is not an optional field",
                     out=dict(tiny_run(), not_recorded={"saved_tensors": "not hooked"}))
        self.refused("not_recorded 'counts' needs a reason", out=dict(tiny_run(), not_recorded={"counts": " "}))

    def test_params_before_carry_megatron_names(self):
        m = self.write()
        for entries in (m["steps"][0]["params_before"], m["parameters"]):
            self.assertEqual([(e["name"], e.get("megatron_name")) for e in entries],
                             [("layers.0.attention.qkv.weight", "decoder.layers.0.self_attention.linear_qkv.weight"),
                              ("layers.0.mlp.fc1.bias", "decoder.layers.0.mlp.linear_fc1.bias")])

    def test_offload_bytes_only_when_recorded(self):
        self.assertNotIn("offloaded_bytes", self.write()["micro_batches"][0])
        mb = self.write(tiny_run(offloaded_bytes=64, reloaded_bytes=64), run="offload")["micro_batches"][0]
        self.assertEqual((mb["offloaded_bytes"], mb["reloaded_bytes"]), (64, 64))


class CaseFiles(unittest.TestCase):
    """rcts_adapter_kit.case.case_files: the one case discovery both drivers use."""

    def test_directories_files_and_missing_paths(self):
        from rcts_adapter_kit.case import case_files
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d))
        for rel in ("b/z.json", "a.json", "invalid/bad.json", "b/notes.txt"):
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            open(os.path.join(d, rel), "w").close()
        self.assertEqual(case_files([d]), [os.path.join(d, "a.json"), os.path.join(d, "b", "z.json")])
        self.assertEqual(case_files([os.path.join(d, "b", "notes.txt")]), [os.path.join(d, "b", "notes.txt")])
        with self.assertRaises(AdapterError) as e:
            case_files([os.path.join(d, "missing.json")])
        self.assertIn("missing.json: no such case file or directory", str(e.exception))

    def test_every_driver_uses_the_kits(self):
        from rcts_adapter_kit import case, drive
        sys.path[:0] = [os.path.join(HERE, "..", "..", "adapters", d) for d in ("pytorch", "megatron", "deepspeed")]
        import check_deepspeed
        import check_megatron
        import check_pytorch
        self.assertIs(check_pytorch.selected, case.selected)
        for driver in (check_pytorch, check_megatron, check_deepspeed):
            self.assertIs(driver.run, drive.run, driver.__name__)
        for driver in (check_megatron, check_deepspeed):
            for f in ("at_world_sizes", "rcts_baseline", "adapter_answer", "judge_worlds", "world_sizes", "need_tools"):
                self.assertIs(getattr(driver, f), getattr(drive, f), f"{driver.__name__}.{f}")
        self.assertIs(check_pytorch.case_lines, drive.case_lines)

    def test_selected_reads_each_case_and_filters_by_id(self):
        from rcts_adapter_kit.case import selected
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d))
        for name, cid in (("a.json", "rng.one"), ("b.json", "memory.two"), ("c.json", "rng.three")):
            with open(os.path.join(d, name), "w") as f:
                json.dump({"id": cid, "ranks": [1, 2]}, f)
        self.assertEqual([(c.id, c.file) for c in selected([d], "rng.*")],
                         [("rng.one", os.path.join(d, "a.json")), ("rng.three", os.path.join(d, "c.json"))])
        self.assertEqual([c.id for c in selected([d])], ["rng.one", "memory.two", "rng.three"])
        with open(os.path.join(d, "b.json"), "w") as f:
            json.dump({"id": "memory.two", "colour": 1}, f)
        with self.assertRaises(AdapterError):  # filtered out or not, a bad case file is refused
            selected([d], "rng.*")


# What only the kit may do (docs/adapter-contract.md): write dump files, find case files,
# sum held bytes. A line of an adapter outside the kit that does one of them is named.
KIT_ONLY = (
    (r"\bnp\.save\b|\bnumpy\.save\b|\btorch\.save\b|\.npy\b|[\"']dump\.json[\"']", "writes dump files"),
    (r"\bos\.walk\b|\bos\.listdir\b|\bos\.scandir\b|^\s*import glob\b|\bglob\.glob\b", "finds files itself"),
    (r"\bsum\(.*\[[\"'](bytes|nbytes)[\"']\]|\.element_size\(\)", "sums bytes itself"),
    (r"^\s*def (write_run|case_files|rcts_runs|held_bytes|bytes_per_layer|safe_stem|outcome|check_outcome|world_sizes"
     r"|world_cmd|rcts_baseline|adapter_answer|case_lines|judge_all|judge_worlds)\b",
     "defines a kit function again"),
)


def kit_only_uses(path, text):
    """'path:line: what (the line)' for each line of `text` doing what only the kit may."""
    import re
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for pattern, what in KIT_ONLY:
            if re.search(pattern, code):
                out.append(f"{path}:{n}: {what} ({line.strip()})")
    return out


class KitOnly(unittest.TestCase):
    ADAPTERS = ("pytorch", "megatron", "deepspeed")

    def test_no_adapter_writes_dumps_finds_cases_or_sums_bytes_itself(self):
        root = os.path.join(HERE, "..", "..", "adapters")
        found, bad = 0, []
        for a in self.ADAPTERS:
            for d, _, files in os.walk(os.path.join(root, a)):
                for f in sorted(files):
                    if f.endswith(".py"):
                        found += 1
                        path = os.path.join(d, f)
                        with open(path, encoding="utf-8") as fh:
                            bad += kit_only_uses(os.path.relpath(path, root), fh.read())
        self.assertGreater(found, 15, "the walk found almost no adapter files")
        self.assertEqual(bad, [], "adapters do what only the kit may:\n" + "\n".join(bad))

    def test_each_planted_use_is_named(self):
        planted = ["np.save(os.path.join(d, 't.npy'), a)", "with open(os.path.join(d, 'dump.json'), 'w') as f:",
                   "for d, _, fs in os.walk(root):", "names = os.listdir(root)", "import glob",
                   "held = sum(e['bytes'] for e in saves)", "n = t.numel() * t.element_size()",
                   "def case_files(paths):", "def check_outcome(j, cid):", "    def held_bytes(self):",
                   "def world_sizes(text):", "def judge_all(a, todo, worlds):"]
        for line in planted:
            self.assertEqual(len(kit_only_uses("x.py", "import os\n" + line + "\n")), 1, line)
        self.assertEqual(kit_only_uses("x.py", "x = 1  # np.save is the kit's\nap.add_argument('--filter', help='glob')\n"
                                       "from rcts_adapter_kit.saved import held_bytes\n"), [])


class Outcomes(unittest.TestCase):
    """Both drivers read every case's outcome from one rcts check report (per mode, per
    world size) with the kit's Judgement: each case its own outcome and check lines."""

    def test_each_case_reads_its_own_part_of_one_report(self):
        sys.path[:0] = [os.path.join(HERE, "..", "..", "adapters", d) for d in ("pytorch", "megatron")]
        import check_megatron
        import check_pytorch
        from rcts_adapter_kit import drive, judge
        self.assertIs(check_pytorch.rcts_check, judge.rcts_check)
        self.assertIs(check_megatron.judge_worlds, drive.judge_worlds)
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d))
        report = {"cases": [
            {"id": "c.x", "outcome": "fail", "checks": [
                {"kind": "memory", "outcome": "fail", "detail": "layer 0 holds 8 bytes more"},
                {"kind": "bitwise", "outcome": "pass"}]},
            {"id": "c.y", "outcome": "pass", "checks": [{"kind": "rng", "outcome": "pass"}]}]}
        stub = os.path.join(d, "rcts")
        with open(stub, "w") as f:  # an rcts that writes this report where --json says, and its text
            f.write("#!/bin/sh\nwhile [ \"$1\" != --json ]; do shift; done\n"
                    f"printf '%s' '{json.dumps(report)}' > \"$2\"\n"
                    "echo '[1/2] FAIL c.x [torch-cpu] (0.10 s): memory: layer 0 holds 8 bytes more'\n"
                    "echo '        memory: judged 1 run, 1 fail'\necho '        bitwise: judged 3 runs, all pass'\n"
                    "echo '[2/2] PASS c.y [torch-cpu] (0.20 s)'\necho '        rng: judged 2 runs, all pass'\nexit 1\n")
        os.chmod(stub, 0o755)
        j = judge.rcts_check(stub, d, os.path.join(d, "r.json"), ["c.json"])
        self.assertEqual(check_pytorch.outcome_of(j, "c.x"), (
            "fail", ["memory"], ["memory: layer 0 holds 8 bytes more"],
            ["memory: judged 1 run, 1 fail", "bitwise: judged 3 runs, all pass"]))
        self.assertEqual(check_pytorch.outcome_of(j, "c.y"), ("pass", [], [], ["rng: judged 2 runs, all pass"]))
        self.assertEqual(len(j.judged()), 3)


class DumpLayout(unittest.TestCase):
    """One rule for where a case's dumps lie below a dump root (docs/dump-format.md:
    ROOT/<case>/<backend>/rank<r>/<run>/): the writer's run_dir, the reader's rcts_runs and
    the markers all go through layout.case_dir / rank_dir."""

    def test_the_writer_and_the_reader_agree_on_every_component(self):
        from rcts_adapter_kit import layout
        from rcts_adapter_kit.case import rcts_runs
        from rcts_adapter_kit.dump import run_dir
        root = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(root))
        self.assertEqual(layout.case_dir(root, "a/b.c"), os.path.join(root, "a_b.c"))
        self.assertEqual(layout.rank_dir(root, "a/b.c", "cpu", 3), os.path.join(root, "a_b.c", "cpu", "rank3"))
        self.assertEqual(run_dir(root, "a/b.c", "c pu", "base line", 1),
                         os.path.join(root, "a_b.c", "c_pu", "rank1", "base_line"))
        for run, rank in (("baseline", 0), ("full recompute", 0), ("baseline", 1)):
            d = run_dir(root, "a/b.c", "cpu", run, rank)
            os.makedirs(d)
            with open(os.path.join(d, layout.MANIFEST), "w") as f:
                json.dump({"run": {"name": run, "role": "baseline"}, "config": {}}, f)
        self.assertEqual({k: v[0] for k, v in rcts_runs(root, "a/b.c").items()},
                         {"baseline": run_dir(root, "a/b.c", "cpu", "baseline"),
                          "full recompute": run_dir(root, "a/b.c", "cpu", "full recompute")})
        self.assertEqual(list(rcts_runs(root, "a/b.c", "cpu", 1)), ["baseline"])
        self.assertEqual(layout.mark_case(root, "x/y", layout.SKIPPED, "why"), layout.case_dir(root, "x/y"))


class Drive(unittest.TestCase):
    """rcts_adapter_kit.drive: what the drivers share, against stub rcts binaries."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(self.tmp, ignore_errors=True))

    def stub(self, name, body):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)
        return path

    def test_pinned_releases_and_where_each_is_imported_from(self):
        from rcts_adapter_kit.drive import pinned_releases, release_path
        pinned = os.path.join(self.tmp, "releases.txt")
        with open(pinned, "w") as f:
            f.write("# header\n0.1.0\n\n0.2.0  # an inline note\n0.3.0\n")
        self.assertEqual(pinned_releases(pinned), ["0.1.0", "0.2.0", "0.3.0"])
        targets = os.path.join(self.tmp, "targets")
        args = (pinned, targets, os.path.join("fw", "core"), "fw-core", "run fw-releases --install")
        self.assertEqual(release_path("0.3.0", *args), "")  # the newest is the venv's
        with self.assertRaisesRegex(AdapterError, r"--release 9\.9: not a release of .*releases\.txt \(0\.1\.0, 0\.2\.0, 0\.3\.0\)"):
            release_path("9.9", *args)
        with self.assertRaisesRegex(AdapterError, r"--release 0\.2\.0: no fw-core at .*targets/0\.2\.0 \(run fw-releases --install\)"):
            release_path("0.2.0", *args)
        os.makedirs(os.path.join(targets, "0.2.0", "fw", "core"))
        open(os.path.join(targets, "0.2.0", "fw", "core", "__init__.py"), "w").close()
        self.assertEqual(release_path("0.2.0", *args), os.path.join(targets, "0.2.0"))

    def test_world_sizes(self):
        from rcts_adapter_kit.drive import world_sizes
        self.assertEqual(world_sizes("1,2, 4"), [1, 2, 4])
        for bad in ("0", "1,x", "", "-1"):
            with self.assertRaises(AdapterError) as e:
                world_sizes(bad)
            self.assertIn(f"--ranks {bad}: ", str(e.exception))

    def test_at_world_sizes_lists_each_case_at_each_world_size_it_lists(self):
        from rcts_adapter_kit.drive import at_world_sizes
        for name, cid, ranks in (("a.json", "rng.one", [1, 2]), ("b.json", "rng.two", [2]), ("c.json", "moe.x", [1])):
            with open(os.path.join(self.tmp, name), "w") as f:
                json.dump({"id": cid, "ranks": ranks}, f)
        a, b = os.path.join(self.tmp, "a.json"), os.path.join(self.tmp, "b.json")
        self.assertEqual([t[:3] for t in at_world_sizes([self.tmp], "rng.*", [1, 2, 4])],
                         [("rng.one", a, 1), ("rng.one", a, 2), ("rng.two", b, 2)])
        self.assertEqual(at_world_sizes([a], "*", [2])[0][3], {"id": "rng.one", "ranks": [1, 2]})
        with self.assertRaises(AdapterError) as e:
            at_world_sizes([self.tmp], "rng.*", [4])
        self.assertEqual(str(e.exception), f"nothing selected from {[self.tmp]} by --filter 'rng.*' at world sizes [4]")

    def test_need_tools_names_what_is_missing(self):
        from rcts_adapter_kit.drive import need_tools
        exe = self.stub("exe", "")
        need_tools(exe, exe)
        with self.assertRaisesRegex(AdapterError, "no rcts binary at /nowhere/rcts"):
            need_tools("/nowhere/rcts", exe)
        with self.assertRaisesRegex(AdapterError, "no Python at /nowhere/python"):
            need_tools(exe, "/nowhere/python")

    def test_on_ranks(self):
        from rcts_adapter_kit.drive import MPIRUN, on_ranks
        self.assertEqual(on_ranks(1, ["rcts", "run"]), ["rcts", "run"])
        self.assertEqual(on_ranks(3, ["rcts", "run"]), MPIRUN + ["-n", "3", "rcts", "run"])

    def test_rcts_baseline_skips_errs_or_leaves_the_case_to_the_adapter(self):
        from rcts_adapter_kit.drive import rcts_baseline
        from rcts_adapter_kit.layout import SKIPPED
        dumps, out = os.path.join(self.tmp, "dumps"), os.path.join(self.tmp, "out")

        def baseline(body):
            return rcts_baseline(self.stub("rcts", 'echo "$*" > "$0.argv"\n' + body), "c.json", "c/x", dumps, 1, out)

        def marker():
            p = os.path.join(out, "c_x", SKIPPED)
            return open(p).read() if os.path.exists(p) else None

        # The dump is there: the adapter decides, whatever rcts printed.
        self.assertIsNone(baseline('mkdir -p "$6/c_x"; echo "[1/1] SKIP c/x [cpu]: a variant"; exit 1\n'))
        self.assertEqual(open(os.path.join(self.tmp, "rcts.argv")).read().split(),
                         ["run", "c.json", "--backend", "cpu", "--dump", dumps])
        self.assertIsNone(marker())
        __import__("shutil").rmtree(dumps)
        why = "rcts itself skips it here: SKIP c/x [cuda-cudnn]: not built"
        self.assertEqual(baseline('mkdir -p "$6/other"; echo "[1/1] SKIP c/x [cuda-cudnn]: not built"\n'),
                         ("skip", [], [why]))
        self.assertEqual(marker(), why + "\n")
        why = "rcts writes no dump of it: dumps of pipeline parallelism are not implemented yet"
        self.assertEqual(baseline('echo "error: dumps of pipeline parallelism are not implemented yet [c/x]" >&2\n'
                                  "exit 2\n"), ("skip", [], [why]))
        self.assertEqual(marker(), why + "\n")
        __import__("shutil").rmtree(out)
        self.assertEqual(baseline('echo "SKIP on stderr is no skip" >&2\nexit 3\n'),
                         ("error", [], ["rcts run --dump: SKIP on stderr is no skip"]))
        self.assertEqual(baseline("printf 'x%.0s' $(seq 400); exit 3\n"), ("error", [], ["rcts run --dump: " + "x" * 300]))
        self.assertIsNone(marker())

    def test_adapter_answer(self):
        from subprocess import CompletedProcess
        from rcts_adapter_kit.drive import adapter_answer

        def answer(rc, out, err=""):
            return adapter_answer(CompletedProcess([], rc, out, err), "c.x")
        self.assertIsNone(answer(0, "wrote: c.x: 3 runs x 1 rank\n"))
        self.assertEqual(answer(0, "skip: c.x: MoE: not modelled: here\n"), ("skip", [], ["MoE: not modelled: here"]))
        self.assertEqual(answer(1, "", "noise\nraised: c.x: first\nraised: c.x: torch raised: IndexError: 3\n"),
                         ("error", [], ["torch raised: IndexError: 3"]))
        self.assertEqual(answer(1, "raised: c.other: not mine\n", "y" * 500),
                         ("error", [], [("raised: c.other: not mine\n" + "y" * 500)[-400:]]))
        self.assertEqual(answer(2, "skip: c.x: printed, then exit 2\n"),
                         ("error", [], ["skip: c.x: printed, then exit 2"]))

    def test_case_lines(self):
        from rcts_adapter_kit.drive import AS_EXPECTED, case_lines
        fail = {"outcome": "fail", "failing": ["bitwise", "masks"], "details": ["bitwise: 3 differ", "masks: " + "m" * 9],
                "verdict": "regression", "checks": ["bitwise: judged 2 runs"]}
        self.assertEqual(case_lines("c.x", "w2", fail), ["FAIL  w2 c.x  [bitwise, masks]   <-- regression",
                                                          "      bitwise: judged 2 runs"])
        self.assertEqual(case_lines("c.x", "w2", fail, details=True, cut=(None, 10))[2:],
                         ["      bitwise: 3", "      masks: mmm"])
        skip = {"outcome": "skip", "failing": [], "details": ["s" * 300], "verdict": "expected-skip"}
        self.assertEqual(case_lines("c.y", f"{'sac':13}", skip, details=True, cut=(200, 400)),
                         [f"SKIP  sac           c.y  ({'s' * 200})"])
        self.assertEqual(case_lines("c.y", "w1", dict(skip, outcome="pass"))[0], "PASS  w1 c.y")
        self.assertEqual(AS_EXPECTED, ("pass", "expected-fail", "expected-skip", "expected-error", "not-applicable",
                                       "xfail"))
        for v in AS_EXPECTED:
            self.assertNotIn("<--", case_lines("c", "w1", dict(skip, verdict=v))[0], v)
        for v in ("regression", "unexpected-pass", "different-failure", "unexpected-skip", "error"):
            self.assertTrue(case_lines("c", "w1", dict(skip, verdict=v))[0].endswith(f"   <-- {v}"), v)

    def test_summary_counts_each_verdict(self):
        from rcts_adapter_kit.drive import summary
        self.assertEqual(summary([{"verdict": v} for v in ("regression", "pass", "pass", "expected-fail")]),
                         "summary: expected-fail 1, pass 2, regression 1")

    def judge(self, report, text, rc, todo, decided, worlds=(1,), **kw):
        import contextlib
        import io
        from rcts_adapter_kit.drive import judge_worlds
        with open(os.path.join(self.tmp, "report.json"), "w") as f:
            json.dump(report, f)
        with open(os.path.join(self.tmp, "text"), "w") as f:
            f.write(text)
        rcts = self.stub("rcts", f'echo "$*" > "$0.argv"\nwhile [ "$1" != --json ]; do shift; done\n'
                                 f'cp {self.tmp}/report.json "$2"\ncat {self.tmp}/text\nexit {rc}\n')
        asked, out, err = [], io.StringIO(), io.StringIO()

        def decide(*c):
            asked.append(c)
            return decided.get(c[0])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            got = judge_worlds(todo, list(worlds), decide, tool="check-x", rcts=rcts, dumps_root=os.path.join(self.tmp, "d"),
                               **kw)
        self.assertEqual(asked, todo)
        return got, out.getvalue(), err.getvalue()

    TODO = [("c.s", "s.json", 1, {}), ("c.x", "x.json", 1, {}), ("c.y", "x.json", 1, {})]
    REPORT = {"cases": [{"id": "c.x", "outcome": "fail", "checks": [
        {"kind": "memory", "outcome": "fail", "detail": "layer 0 holds 8 bytes more"}]},
        {"id": "c.y", "outcome": "pass", "checks": []}]}

    def test_judge_worlds_without_expectations(self):
        dumps = os.path.join(self.tmp, "d", "w1")
        json_out = os.path.join(self.tmp, "out.json")
        rc, out, err = self.judge(self.REPORT, "", 1, self.TODO, {"c.s": ("skip", [], ["no baseline"])},
                                  details=True, json_out=json_out, case_filter="c.*")
        self.assertEqual(rc, 1)
        self.assertEqual(out, "SKIP  w1 c.s  (no baseline)\nFAIL  w1 c.x  [memory]   <-- regression\n"
                              "      memory: layer 0 holds 8 bytes more\nPASS  w1 c.y\n"
                              "summary: pass 2, regression 1\n")
        self.assertEqual(err, "check-x: w1 c.s: skip\ncheck-x: w1 c.x: ran\ncheck-x: w1 c.y: ran\n")
        self.assertEqual(open(os.path.join(self.tmp, "rcts.argv")).read().split(),
                         ["check", dumps, "--json", dumps + ".json", "--cases", "s.json", "x.json",
                          "--filter", "c.*"])
        with open(json_out) as f:
            self.assertEqual(json.load(f)[1], {"case": "c.x", "ranks": 1, "outcome": "fail", "failing": ["memory"],
                                               "details": ["memory: layer 0 holds 8 bytes more"],
                                               "verdict": "regression"})
        rc, out, _ = self.judge(self.REPORT, "", 0, self.TODO[2:], {})
        self.assertEqual((rc, out), (0, "PASS  w1 c.y\nsummary: pass 1\n"))

    def test_judge_worlds_runs_rcts_check_at_each_world_size(self):
        from unittest import mock
        from rcts_adapter_kit.drive import MPIRUN
        self.stub("mpirun", f'echo "$*" > {self.tmp}/mpirun.argv\nshift {len(MPIRUN) + 1}\nexec "$@"\n')
        todo = [("c.x", "x.json", 2, {}), ("c.y", "y.json", 1, {})]
        with mock.patch.dict(os.environ, PATH=self.tmp + os.pathsep + os.environ["PATH"]):
            rc, out, _ = self.judge(self.REPORT, "", 0, todo, {}, worlds=(2, 3, 1))
        self.assertEqual(out, "FAIL  w2 c.x  [memory]   <-- regression\nPASS  w1 c.y\n"
                              "summary: pass 1, regression 1\n")
        argv = open(os.path.join(self.tmp, "mpirun.argv")).read().split()
        self.assertEqual(argv[:len(MPIRUN) + 2], MPIRUN[1:] + ["-n", "2", os.path.join(self.tmp, "rcts")])
        self.assertEqual(argv[-3:], [os.path.join(self.tmp, "d", "w2.json"), "--cases", "x.json"])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "d", "w3")), "no rcts check where nothing ran")

    def test_judge_worlds_takes_rcts_verdicts_with_expectations(self):
        report = {"expectations": {}, "cases": [
            dict(self.REPORT["cases"][0], expectation={"verdict": "expected-fail"}),
            dict(self.REPORT["cases"][1], expectation={"verdict": "unexpected-pass"})]}
        text = "[1/2] FAIL c.x\nexpectations  e.json: 1 unexpected-pass\n  c.y: unexpected-pass\n"
        rc, out, _ = self.judge(report, text, 1, self.TODO, {"c.s": ("skip", [], ["no baseline"])}, expect="e.json",
                                update=True)
        self.assertEqual(rc, 1)
        self.assertEqual(out, "SKIP  w1 c.s  (no baseline)   <-- error\nFAIL  w1 c.x  [memory]\n"
                              "PASS  w1 c.y   <-- unexpected-pass\n"
                              "expectations  e.json: 1 unexpected-pass\n  c.y: unexpected-pass\n"
                              "summary: error 1, expected-fail 1, unexpected-pass 1\n")
        self.assertEqual(open(os.path.join(self.tmp, "rcts.argv")).read().split()[-3:],
                         ["--expect", "e.json", "--update-expectations"])
        rc, out, _ = self.judge(report, text, 0, self.TODO[1:2], {}, expect="e.json")
        self.assertEqual(rc, 0)
        with self.assertRaisesRegex(AdapterError, "(?s)rcts check --expect e.json wrote no report: .*unexpected-pass"):
            self.judge(self.REPORT, text, 0, self.TODO, {}, expect="e.json")


class EndOfForward(unittest.TestCase):
    """rcts_adapter_kit.saved.at_end_of_forward: a watched save's bytes as its tensor is at
    the end of the forward (Megatron's CheckpointWithoutOutput frees a saved storage)."""

    def test_freed_dropped_and_held_saves(self):
        from types import SimpleNamespace
        from rcts_adapter_kit.saved import at_end_of_forward, bytes_per_layer, held_bytes, note_save
        rec = SimpleNamespace(phase="forward", param_storages=set(), checkpoint_inputs={}, saves=[],
                              module_path=lambda: "layers.0.mlp", save_namer=None)
        kept, freed = torch.ones(2, 3), torch.ones(4)
        note_save(rec, kept, watch=True)
        note_save(rec, kept, watch=True)           # saved twice: held once
        note_save(rec, freed, owner="layers.1", watch=True)
        note_save(rec, torch.ones(5), op="aten::mul", watch=True)  # nothing holds it after the forward
        freed.untyped_storage().resize_(0)
        saves = at_end_of_forward(rec.saves)
        self.assertEqual([(s["bytes"], s.get("shape"), s.get("op")) for s in saves],
                         [(24, [2, 3], None), (24, [2, 3], None), (0, None, "torch.utils.checkpoint"), (0, None, "aten::mul")])
        self.assertTrue(all("_tensor" not in s for s in saves))
        self.assertEqual((bytes_per_layer(saves, 2), held_bytes(saves)), ([24, 0], 24))


class TensorFiles(unittest.TestCase):
    """A dump's tensor files are read as rcts reads them: inside the dump, C order, exactly
    header and data bytes (symlinks out, Fortran order and trailing bytes are refused)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(self.dir))
        self.arr = np.arange(6, dtype="<f4").reshape(2, 3)

    def entry(self, name, arr=None):
        arr = self.arr if arr is None else arr
        import hashlib
        return Json(os.path.join(self.dir, "dump.json"),
                    {"file": name, "dtype": "f32", "shape": [2, 3],
                     "sha256": hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()}, "/parameters/0")

    def refused(self, name, want):
        with self.assertRaises(DumpError) as e:
            _read_tensor(self.dir, self.entry(name))
        self.assertIn("/parameters/0/file", str(e.exception))
        self.assertIn(want, str(e.exception))

    def test_a_good_file_reads(self):
        np.save(os.path.join(self.dir, "t.npy"), self.arr)
        self.assertEqual(_read_tensor(self.dir, self.entry("t.npy")).tolist(), self.arr.tolist())

    def test_trailing_bytes(self):
        np.save(os.path.join(self.dir, "t.npy"), self.arr)
        with open(os.path.join(self.dir, "t.npy"), "ab") as f:
            f.write(b"\0\0\0\0")
        self.refused("t.npy", "holds 28 data bytes, shape [2, 3] of '<f4' needs 24 (bytes after the data)")

    def test_fortran_order(self):
        np.save(os.path.join(self.dir, "t.npy"), np.asfortranarray(self.arr))
        self.refused("t.npy", "is in Fortran order; dumps are C order")

    def test_a_symlink_out_of_the_dump(self):
        outside = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(outside))
        np.save(os.path.join(outside, "secret.npy"), self.arr)
        os.symlink(os.path.join(outside, "secret.npy"), os.path.join(self.dir, "t.npy"))
        self.refused("t.npy", f"is a symbolic link to '{outside}/secret.npy', outside the dump directory")

    def test_a_fifo_is_not_missing(self):
        os.mkfifo(os.path.join(self.dir, "t.npy"))
        self.refused("t.npy", "is not a regular file")


class FileNames(unittest.TestCase):
    def test_the_examples_rcts_is_pinned_by(self):
        """The safe file-name rule: the examples tests/harness/io/npy_test.cpp reads too."""
        from rcts_adapter_kit.layout import safe_stem
        with open(os.path.join(HERE, "..", "support", "file_names.json"), encoding="utf-8") as f:
            examples = json.load(f)["examples"]
        self.assertGreaterEqual(len(examples), 10)
        for given, want in examples:
            self.assertEqual(safe_stem(given), want, given)


if __name__ == "__main__":
    unittest.main()


class Worker(unittest.TestCase):
    """rcts_adapter_kit.worker: one process answers case after case exactly as a process per
    case would; a case that leaks state, crashes or hangs is an error for that case only,
    and the next case gets a fresh process."""
    SERVER = ("import os, sys, time; sys.path.insert(0, {kit!r})\n"
              "from rcts_adapter_kit.worker import serve\n"
              "leaks = []\n"
              "def main(argv):\n"
              "    os.write(1, b'stray bytes on fd 1\\n')  # must not reach the driver as an answer\n"
              "    if argv[0] == 'crash': os._exit(3)\n"
              "    if argv[0] == 'hang': time.sleep(60)\n"
              "    if argv[0] == 'leak': leaks.append('hooks: 0 -> 1')\n"
              "    if argv[0] == 'raise': raise ValueError('boom')\n"
              "    print('wrote: ' + ' '.join(argv) + ' pid ' + str(os.getpid())); print('to stderr', file=sys.stderr)\n"
              "    return len(argv)\n"
              "def between():\n"
              "    out = list(leaks); leaks.clear(); return out\n"
              "sys.exit(serve(main, between))\n")

    def setUp(self):
        from rcts_adapter_kit.worker import Worker as W
        kit = os.path.join(HERE, "..", "..", "adapters", "kit")
        self.w = W([sys.executable, "-c", self.SERVER.format(kit=kit)], timeout=5)
        self.addCleanup(self.w.close)

    def answer(self, *argv):
        done, failure = self.w.run(list(argv))
        return done.returncode, done.stdout, failure

    def pid(self):
        rc, out, failure = self.answer("ok")
        self.assertIsNone(failure)
        return out.split(" pid ")[1]

    def test_cases_share_one_process_and_get_what_a_process_would_print(self):
        done, failure = self.w.run(["a", "b"])
        self.assertEqual((done.returncode, done.stdout, done.stderr, failure), (2, "wrote: a b pid " +
                                                                               done.stdout.split(" pid ")[1],
                                                                               "to stderr\n", None))
        self.assertEqual(self.pid(), self.pid())
        self.assertEqual(self.w.started, 1)

    def test_a_leak_is_an_error_naming_it_and_the_next_case_runs_in_a_fresh_process(self):
        first = self.pid()
        rc, out, failure = self.answer("leak")
        self.assertEqual(failure, "the case left state behind in the worker: hooks: 0 -> 1")
        self.assertNotEqual(self.pid(), first)
        self.assertEqual(self.w.started, 2)

    def test_a_crash_mid_case_is_an_error_for_that_case_only(self):
        first = self.pid()
        rc, out, failure = self.answer("crash")
        self.assertTrue(failure.startswith("the worker exited mid-case (exit 3)"), failure)
        self.assertNotEqual(rc, 0)
        self.assertNotEqual(self.pid(), first)

    def test_a_hang_is_killed_after_the_timeout(self):
        self.w.timeout = 1
        first = self.pid()
        rc, out, failure = self.answer("hang")
        self.assertTrue(failure.startswith("the worker gave no answer within 1 s: killed"), failure)
        self.w.timeout = 5
        self.assertNotEqual(self.pid(), first)

    def test_the_worker_serves_no_case_after_a_leak(self):
        import subprocess
        kit = os.path.join(HERE, "..", "..", "adapters", "kit")
        r = subprocess.run([sys.executable, "-c", self.SERVER.format(kit=kit)], capture_output=True, text=True,
                           input='{"argv": ["leak"]}\n{"argv": ["ok"]}\n', timeout=60)
        answers = [json.loads(l) for l in r.stdout.splitlines()]
        self.assertEqual([(a["exiting"], a["leaked"]) for a in answers], [(True, ["hooks: 0 -> 1"])])
        self.assertIn("stray bytes on fd 1", r.stderr)

    def test_a_raise_is_the_traceback_a_process_would_print_then_a_fresh_process(self):
        first = self.pid()
        done, failure = self.w.run(["raise"])
        self.assertEqual((done.returncode, failure), (1, None))
        self.assertIn("ValueError: boom", done.stderr)
        self.assertNotEqual(self.pid(), first)


class Isolation(unittest.TestCase):
    """rcts_adapter_kit.isolation.TorchState: the default generator is restored between
    cases; every other change to torch's global state is named."""

    def setUp(self):
        from rcts_adapter_kit.isolation import TorchState
        self.state = TorchState()

    def test_a_clean_case_leaves_nothing_and_the_generator_starts_again(self):
        first = torch.rand(3)
        torch.manual_seed(123)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t), Generators().guard():
            torch.rand(2)
        self.assertEqual(self.state.between(), [])
        self.assertTrue(torch.equal(torch.rand(3), first))

    def test_each_kind_of_leftover_is_named(self):
        import torch.nn.modules.module as module
        from torch.utils._python_dispatch import TorchDispatchMode
        hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        mode = TorchDispatchMode()
        threads = torch.get_num_threads()
        leftovers = {  # the line naming what a case left -> (how it leaves it, how the test undoes it)
            "saved-tensor hooks: False -> True": (hooks.__enter__, lambda: hooks.__exit__(None, None, None)),
            "dispatch modes: 0 -> 1": (mode.__enter__, lambda: mode.__exit__(None, None, None)),
            "module hooks (_global_forward_hooks): 0 -> 1": (
                lambda: setattr(self, "handle", module.register_module_forward_hook(lambda *a: None)),
                lambda: self.handle.remove()),
            "grad mode: True -> False": (lambda: torch.set_grad_enabled(False), lambda: torch.set_grad_enabled(True)),
            f"torch threads: {threads} -> {threads + 1}": (lambda: torch.set_num_threads(threads + 1), lambda: torch.set_num_threads(threads)),
            "environment: RCTS_PYTORCH_FAULT=None -> 'x'": (
                lambda: os.environ.__setitem__("RCTS_PYTORCH_FAULT", "x"), lambda: os.environ.pop("RCTS_PYTORCH_FAULT")),
        }
        os.environ.pop("RCTS_PYTORCH_FAULT", None)
        self.state = __import__("rcts_adapter_kit.isolation", fromlist=["TorchState"]).TorchState()
        for name, (leave, undo) in leftovers.items():
            with self.subTest(name):
                leave()
                try:
                    leaked = self.state.between()
                finally:
                    undo()
                self.assertEqual(leaked, [name])
                self.assertEqual(self.state.between(), [])

    def test_an_adapters_own_state_is_reset(self):
        from rcts_adapter_kit.isolation import TorchState
        kept = [1]
        self.assertEqual(TorchState(also=(kept.clear,)).between(), [])
        self.assertEqual(kept, [])
