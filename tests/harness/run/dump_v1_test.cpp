// Dump format 1 (docs/dump-format.md): a real run written and read back keeps every
// bit; the reader refuses tampered dumps naming the file and field; the checks that
// judge other implementations' dumps (no rcts mask rule, opaque RNG states) and the
// reference comparison fail what they must.
#include "harness/dumps/dump_v1.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.hpp"
#include "harness/checks/applicability.hpp"
#include "harness/checks/check_kinds.hpp"
#include "harness/checks/checks.hpp"
#include "harness/checks/compare.hpp"
#include "harness/checks/portable_checks.hpp"
#include "harness/checks/reference_compare.hpp"
#include "harness/reports/report.hpp"
#include "harness/run/dump_check.hpp"
#include "harness/run/runner.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/faults.hpp"
#include "tests/harness/test_tensors.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/dump_dir.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using test_support::read_dump_error;
using test_support::read_manifest;
using test_support::write_baseline_dump;
using test_support::write_manifest;

// Two layers, two micro-batches, two steps, both dropouts, selective recompute of
// core attention (so recompute draws exist), bf16 activations.
Config small_config() {
  Config c = test_support::dense({.ffn = 32, .micro_batches = 2, .steps = 2});
  c.recompute.recompute_granularity = "selective";
  return c;
}

RunRecord recorded(const Config& c = small_config()) { return test_support::run_cpu_recorded(c); }

void expect_same(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  const BitwiseDiff d = compare_bitwise(a, b);
  EXPECT_TRUE(d.equal) << what << ": " << d.message();
}

TEST(DumpV1, RoundTripKeepsEveryBitAndShape) {
  ScratchDir dir;
  const RunRecord r = recorded();
  ASSERT_EQ(r.inputs.front().dtype(), DType::bf16);
  write_baseline_dump(dir.path(), r);
  const DumpedRun d = read_dump(dir.path());
  const RunRecord& b = d.record;
  EXPECT_EQ(d.meta.case_id, "test.case");
  EXPECT_EQ(config_to_json(b.config), config_to_json(r.config));
  ASSERT_EQ(b.losses.size(), 4u);
  EXPECT_EQ(std::memcmp(b.losses.data(), r.losses.data(), r.losses.size() * sizeof(double)), 0);
  for (size_t i = 0; i < r.losses.size(); ++i) {
    expect_same(r.inputs[i], b.inputs[i], "input");
    expect_same(r.targets[i], b.targets[i], "target");
    expect_same(r.outputs[i], b.outputs[i], "output");
    expect_same(r.input_grads[i], b.input_grads[i], "input grad");
    EXPECT_EQ(b.inputs[i].shape(), (Shape{16, 16}));  // (s*b, h): not flattened
    EXPECT_EQ(b.rng_after[i], r.rng_after[i]);
    EXPECT_EQ(b.saved_bytes_per_layer[i], r.saved_bytes_per_layer[i]);
    EXPECT_EQ(b.saved_peaks[i], r.saved_peaks[i]);
    ASSERT_EQ(b.grads_after_micro_batch[i].size(), r.params.size());
    for (size_t p = 0; p < r.params.size(); ++p)
      expect_same(r.grads_after_micro_batch[i][p].tensor, b.grads_after_micro_batch[i][p].tensor, "micro-batch grad");
  }
  for (size_t s = 0; s < 2; ++s)
    for (size_t p = 0; p < r.params.size(); ++p) {
      expect_same(r.params_before_step[s][p].tensor, b.params_before_step[s][p].tensor, "params before step");
      expect_same(r.grads_of_step[s][p].tensor, b.grads_of_step[s][p].tensor, "step grad");
    }
  ASSERT_EQ(b.masks.size(), r.masks.size());
  int recomputes = 0;
  for (size_t k = 0; k < r.masks.size(); ++k) {
    EXPECT_EQ(b.masks[k].site, r.masks[k].site);
    EXPECT_EQ(b.masks[k].seed, r.masks[k].seed);
    EXPECT_EQ(b.masks[k].offset, r.masks[k].offset);
    EXPECT_EQ(b.masks[k].digest, r.masks[k].digest);
    EXPECT_EQ(b.masks[k].step, r.masks[k].step);
    EXPECT_EQ(b.masks[k].shape, r.masks[k].shape);
    EXPECT_EQ(b.masks[k].recompute, r.masks[k].recompute);
    recomputes += b.masks[k].recompute;
  }
  EXPECT_GT(recomputes, 0);
  EXPECT_EQ(b.counts.size(), r.counts.size());
  EXPECT_EQ(b.saves_per_micro_batch.size(), 4u);
  // The checks judge the read-back record exactly as the original.
  EXPECT_EQ(check_bitwise(r, b, "read back").outcome, Outcome::pass) << check_bitwise(r, b, "read back").detail;
  EXPECT_EQ(check_masks(b, b, "baseline").outcome, Outcome::pass) << check_masks(b, b, "baseline").detail;
  EXPECT_EQ(check_rng(b, b, "baseline").outcome, Outcome::pass);
}

TEST(DumpV1, ManifestNamesMegatronParameters) {
  EXPECT_EQ(megatron_name("layers.3.attention.qkv.weight"), "decoder.layers.3.self_attention.linear_qkv.weight");
  EXPECT_EQ(megatron_name("layers.0.mlp.fc2.bias"), "decoder.layers.0.mlp.linear_fc2.bias");
  EXPECT_EQ(megatron_name("layers.1.moe.experts.2.fc1.weight"),
            "decoder.layers.1.mlp.experts.local_experts.2.linear_fc1.weight");
  EXPECT_EQ(megatron_name("something.else"), "");
}

TEST(DumpV1, TamperedTensorIsRefusedNamingTheFile) {
  ScratchDir dir;
  write_baseline_dump(dir.path(), recorded());
  const std::string file = read_manifest(dir.path())["micro_batches"][1]["output"]["file"];
  {
    std::fstream f(dir.path() / file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  const std::string why = read_dump_error(dir.path());
  EXPECT_NE(why.find("/micro_batches/1/output/sha256"), std::string::npos) << why;
  EXPECT_NE(why.find(file), std::string::npos) << why;
}

TEST(DumpV1, UnknownKeyMissingManifestAndBadLossBitsAreRefused) {
  ScratchDir dir;
  write_baseline_dump(dir.path(), recorded());
  auto j = read_manifest(dir.path());
  j["micro_batches"][0]["extra"] = 1;
  write_manifest(dir.path(), j);
  EXPECT_NE(read_dump_error(dir.path()).find("/micro_batches/0/extra = 1: unknown key 'extra'"), std::string::npos)
      << read_dump_error(dir.path());
  j["micro_batches"][0].erase("extra");
  j["micro_batches"][0]["loss"]["bits"] = "0x12";
  write_manifest(dir.path(), j);
  EXPECT_NE(read_dump_error(dir.path()).find("/micro_batches/0/loss/bits"), std::string::npos) << read_dump_error(dir.path());
  fs::remove(dir.path() / "dump.json");
  EXPECT_NE(read_dump_error(dir.path()).find("no dump manifest"), std::string::npos) << read_dump_error(dir.path());
}

TEST(DumpV1, FirstDifferenceNamesThePath) {
  const nlohmann::json a = {{"model", {{"hidden_size", 16}, {"heads", 2}}}};
  nlohmann::json b = a;
  EXPECT_EQ(first_difference(a, b), "");
  b["model"]["hidden_size"] = 32;
  EXPECT_EQ(first_difference(a, b), "/model/hidden_size: 32, rcts resolves 16");
}

// Another implementation declares no rcts mask rule: the masks check still needs every
// recompute draw to equal its forward draw and no generator to replay its masks.
TEST(PortableMasks, CleanRunPassesWithoutTheMaskRule) {
  RunRecord r = recorded();
  r.rcts_mask_rule = false;
  const CheckResult res = check_masks(r, r, "baseline");
  EXPECT_EQ(res.outcome, Outcome::pass) << res.detail;
  EXPECT_NE(res.detail.find("no rcts mask rule declared"), std::string::npos) << res.detail;
}

TEST(PortableMasks, RecomputeDrawDifferingFromItsForwardFails) {
  RunRecord r = recorded();
  r.rcts_mask_rule = false;
  for (auto& m : r.masks)
    if (m.recompute) {
      m.mask = m.mask.clone(host_placement());
      m.mask.data<uint8_t>()[0] ^= 1;
      m.digest ^= 1;  // what a reader computes from the changed bytes differs too
      break;
    }
  const CheckResult res = check_masks(r, r, "v");
  ASSERT_EQ(res.outcome, Outcome::fail);
  EXPECT_NE(res.detail.find("differs from its forward draw: 1 of"), std::string::npos) << res.detail;
}

TEST(PortableMasks, GeneratorThatDoesNotAdvanceFails) {
  FaultScope fault(Fault::rng_replayed_per_micro_batch);
  RunRecord r = recorded();
  r.rcts_mask_rule = false;
  const CheckResult res = check_masks(r, r, "baseline");
  ASSERT_EQ(res.outcome, Outcome::fail) << res.detail;
  EXPECT_NE(res.detail.find("repeats the mask of"), std::string::npos) << res.detail;
}

TEST(OpaqueRng, StatesComparedByDigestPerGenerator) {
  RunRecord base, run;
  base.seed_offset_rng = run.seed_offset_rng = false;
  base.config.run.micro_batches = run.config.run.micro_batches = 2;
  base.rng_after_opaque = {{{"cpu", "aa"}, {"cuda:0", "bb"}}, {{"cpu", "cc"}, {"cuda:0", "dd"}}};
  run.rng_after_opaque = base.rng_after_opaque;
  EXPECT_EQ(check_rng(base, run, "v").outcome, Outcome::pass);
  run.rng_after_opaque[1]["cuda:0"] = "ee";
  const CheckResult res = check_rng(base, run, "v");
  ASSERT_EQ(res.outcome, Outcome::fail);
  EXPECT_NE(res.detail.find("'cuda:0' after step 0 micro-batch 1"), std::string::npos) << res.detail;
}

TEST(ReferenceCompare, ReportsMaxAbsAndRelativeErrorPerTensor) {
  const RunRecord ref = recorded();
  RunRecord run = recorded();
  const CheckResult same = compare_with_reference(ref, run, {0, 0}, "baseline");
  EXPECT_EQ(same.outcome, Outcome::pass) << same.detail;
  EXPECT_NE(same.detail.find("layers.0.attention.qkv.weight.grad: max abs 0.000e+00, rel 0.000e+00"), std::string::npos)
      << same.detail;
  // One element of one step's gradient off by 0.5: outside a tight tolerance, inside a loose one.
  Tensor& g = run.grads_of_step[1][2].tensor;
  g = g.clone(host_placement());
  std::vector<float> v = to_vector<float>(g);
  v[0] += 0.5f;
  store(g, v.data());
  const CheckResult tight = compare_with_reference(ref, run, {1e-3, 0}, "baseline");
  ASSERT_EQ(tight.outcome, Outcome::fail) << tight.detail;
  EXPECT_NE(tight.detail.find(run.grads_of_step[1][2].name + " is outside the tolerance"), std::string::npos)
      << tight.detail;
  EXPECT_NE(tight.detail.find("max abs 5.000e-01"), std::string::npos) << tight.detail;
  EXPECT_NE(tight.detail.find("(worst at step 1)"), std::string::npos) << tight.detail;
  EXPECT_EQ(compare_with_reference(ref, run, {0, 1.0}, "baseline").outcome, Outcome::pass);
}

}  // namespace
}  // namespace rcts::harness

namespace rcts::harness {
namespace {

// What a writer declares it could not observe is named in the dump, never
// compared, and the check says so.
TEST(NotRecorded, DeclaredSideEffectsAreReadBackAndNotCompared) {
  ScratchDir dir;
  RunRecord r = recorded();
  r.implementation = "pytorch";
  r.not_recorded.insert("side_effects");
  r.not_recorded_why["side_effects"] = "only the adapter's driver could count them";
  write_baseline_dump(dir.path(), r);
  const auto j = read_manifest(dir.path());
  EXPECT_FALSE(j.contains("side_effects"));
  EXPECT_EQ(j.at("not_recorded").at("side_effects"), "only the adapter's driver could count them");
  const RunRecord back = read_dump(dir.path()).record;
  EXPECT_EQ(back.not_recorded.count("side_effects"), 1u);
  EXPECT_EQ(back.not_recorded_why.at("side_effects"), "only the adapter's driver could count them");

  RunRecord base = recorded();  // rcts's baseline records side effects
  ASSERT_FALSE(base.side_effects.empty());
  const CheckResult res = check_bitwise(base, back, "v");
  EXPECT_EQ(res.outcome, Outcome::pass) << res.detail;
  ASSERT_EQ(res.not_judged.size(), 1u);
  EXPECT_NE(res.not_judged[0].find("side effects: not recorded by pytorch (only the adapter's driver"),
            std::string::npos)
      << res.not_judged[0];
  EXPECT_NE(res.detail.find("side effects: not recorded"), std::string::npos) << res.detail;
  nlohmann::json out;
  to_json(out, res);
  EXPECT_EQ(out.at("not_judged").size(), 1u);
}

TEST(NotRecorded, AFieldDeclaredNotRecordedMustBeAbsentAndHaveAReason) {
  ScratchDir dir;
  write_baseline_dump(dir.path(), recorded());
  auto j = read_manifest(dir.path());
  j["not_recorded"] = {{"side_effects", "x"}};
  write_manifest(dir.path(), j);
  EXPECT_NE(read_dump_error(dir.path()).find("/not_recorded/side_effects = \"x\": declared not recorded, but the dump has side_effects"),
            std::string::npos)
      << read_dump_error(dir.path());
  j.erase("side_effects");
  j["not_recorded"] = {{"side_effects", ""}};
  write_manifest(dir.path(), j);
  EXPECT_NE(read_dump_error(dir.path()).find("/not_recorded/side_effects"), std::string::npos) << read_dump_error(dir.path());
  j["not_recorded"] = {{"losses", "x"}};
  write_manifest(dir.path(), j);
  EXPECT_NE(read_dump_error(dir.path()).find("unknown key 'losses'"), std::string::npos) << read_dump_error(dir.path());
}

// A check with nothing to judge is a skip with the reason, never a pass.
TEST(NothingToJudge, OpaqueStatesCannotShowTheSeedsOfASeedRanksCase) {
  Case c;
  c.seed_ranks.tp = 3;
  CheckEnv o;
  GroupLayout layout;
  RunRecord base;
  base.implementation = "pytorch";
  base.seed_offset_rng = false;
  base.rng_after_opaque = {{{"cpu", "aa"}}};
  const CheckContext x{.c = c, .env = o, .multi = false, .base = base, .base_layout = layout, .rerun = {}};
  const auto why = not_applicable(*find_check_kind("rng"), x);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("seeds as tp 3, ep 0, etp 0"), std::string::npos) << *why;
  c.seed_ranks.tp = 0;
  EXPECT_FALSE(not_applicable(*find_check_kind("rng"), x).has_value());
  base.rng_after_opaque = {{}};
  ASSERT_TRUE(not_applicable(*find_check_kind("rng"), x).has_value());
  EXPECT_NE(not_applicable(*find_check_kind("rng"), x)->find("records no generator state"), std::string::npos);
  base.rcts_mask_rule = false;  // no draws at all: the masks check has nothing to judge
  ASSERT_TRUE(not_applicable(*find_check_kind("masks"), x).has_value());
}

TEST(NothingToJudge, JudgedLinesSayPerCheckWhatWasJudgedOrWhySkipped) {
  CaseResult r;
  r.checks = {{"bitwise", Outcome::pass, "a"}, {"bitwise", Outcome::fail, "b"},
              {"rng", Outcome::skip, "baseline: not applicable: no state"}};
  r.checks[0].not_judged = {"side effects: not recorded by pytorch"};
  const auto lines = judged_lines(r);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "bitwise: judged 2 runs, 1 fail; not judged: side effects: not recorded by pytorch");
  EXPECT_EQ(lines[1], "rng: skip: baseline: not applicable: no state");
}

}  // namespace
}  // namespace rcts::harness
