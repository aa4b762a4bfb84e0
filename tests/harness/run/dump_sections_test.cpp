// The optional sections of a dump (memory, counts, side effects, offload), each absent,
// empty, partial and full, with what the reader makes of it and the verdict of the
// check that needs it: what a dump does not record is a skip with its reason or a
// named refusal, never a pass (docs/dump-format.md, "Which checks need what").
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/checks/applicability.hpp"
#include "harness/checks/check_kinds.hpp"
#include "harness/checks/checks.hpp"
#include "harness/dumps/dump_v1.hpp"
#include "tests/harness/test_tensors.hpp"
#include "tests/support/dump_dir.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;

// One layer, two micro-batches (so "some micro-batches only" can be written).
const RunRecord& small_run() { return test_support::dump_run(2); }

// The dump in `dir` with its manifest edited by `edit`, read back (or the refusal).
struct ReadBack {
  std::optional<RunRecord> record;
  std::string error;
};
ReadBack dump_with(const fs::path& dir, const std::function<void(json&)>& edit) {
  test_support::write_edited_dump(dir, small_run(), edit);
  ReadBack out;
  try {
    out.record = read_dump(dir).record;
  } catch (const Error& e) {
    out.error = e.message();
  }
  return out;
}

std::set<std::string> memory_not_recorded(const RunRecord& r) {
  std::set<std::string> out;
  for (const auto& f : r.not_recorded)
    if (f.rfind("memory.", 0) == 0) out.insert(f);
  return out;
}

// The memory kind's baseline pass over `r` for a case whose budget is `budget` bytes.
CheckResult memory_verdict(const RunRecord& r, int64_t budget) {
  Case c;
  c.expect.memory = MemoryExpect{};
  c.expect.memory->budget_bytes = budget;
  const CheckEnv env;
  const GroupLayout layout;
  const CheckContext x{c, env, false, r, layout, nullptr, nullptr, nullptr, {}};
  const CheckKind& k = *find_check_kind("memory");
  std::vector<CheckResult> out;
  run_check_pass(k, k.on_baseline, x, out);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

struct MemoryRow {
  std::string label;
  std::function<void(json&)> edit;
  std::set<std::string> not_recorded;  // of memory.*
  Outcome verdict;                     // under a budget one byte below the recorded peak
};

TEST(DumpSections, MemoryAbsentEmptyPartialFull) {
  ScratchDir dir;
  const RunRecord& run = small_run();
  const int64_t peak = run.saved_peak;
  ASSERT_GT(peak, 0);
  const std::set<std::string> all = {"memory.device_peak", "memory.saved_peak", "memory.workspace_peak"};
  const std::vector<MemoryRow> rows = {
      {"absent", [](json& j) { j.erase("memory"); }, all, Outcome::skip},
      {"empty", [](json& j) { j["memory"] = json::object(); }, all, Outcome::skip},
      {"partial: no saved_peak", [](json& j) { j["memory"].erase("saved_peak"); }, {"memory.saved_peak"}, Outcome::skip},
      {"partial: saved_peak only",
       [](json& j) {
         j["memory"].erase("device_peak");
         j["memory"].erase("workspace_peak");
       },
       {"memory.device_peak", "memory.workspace_peak"},
       Outcome::fail},
      {"full", [](json&) {}, {}, Outcome::fail},
  };
  const std::string skip = "baseline: not applicable: the budget needs the saved-activation peak, which the dump of "
                           "rcts does not record";
  const std::string over = "baseline: saved-activation peak " + std::to_string(peak) + " bytes exceeds the budget " +
                           std::to_string(peak - 1);
  for (const auto& row : rows) {
    const ReadBack b = dump_with(dir.path() / "d", row.edit);
    ASSERT_TRUE(b.record) << row.label << ": " << b.error;
    EXPECT_EQ(memory_not_recorded(*b.record), row.not_recorded) << row.label;
    if (!row.not_recorded.count("memory.saved_peak")) {
      EXPECT_EQ(b.record->saved_peak, peak) << row.label;
    }
    const CheckResult v = memory_verdict(*b.record, peak - 1);
    EXPECT_EQ(v.outcome, row.verdict) << row.label << ": " << v.detail;
    EXPECT_EQ(v.detail, row.verdict == Outcome::skip ? skip : over) << row.label;
  }
  // A budget that only a variant asks for needs the peak just as much.
  {
    const ReadBack empty = dump_with(dir.path() / "d", [](json& j) { j["memory"] = json::object(); });
    ASSERT_TRUE(empty.record) << empty.error;
    Case c;
    Variant v;
    v.name = "v";
    v.expect.memory = MemoryExpect{};
    v.expect.memory->budget_bytes = peak - 1;
    const CheckEnv env;
    const GroupLayout layout;
    const CheckContext x{c, env, false, *empty.record, layout, &v, &*empty.record, &layout, {}};
    const CheckKind& k = *find_check_kind("memory");
    std::vector<CheckResult> out;
    run_check_pass(k, k.on_variant, x, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].outcome, Outcome::skip) << out[0].detail;
    EXPECT_EQ(out[0].detail, "v: not applicable: the budget needs the saved-activation peak, which the dump of rcts "
                             "does not record");
  }
  // Per micro-batch peaks on some micro-batches only are refused, not read as a shorter list.
  const ReadBack some = dump_with(dir.path() / "d", [](json& j) { j["micro_batches"][1].erase("saved_peak"); });
  EXPECT_TRUE(some.error.ends_with("...: saved_peak is given for some micro-batches only")) << some.error;
  // A recorded peak within the budget passes; an unknown memory key is refused.
  const ReadBack full = dump_with(dir.path() / "d", [](json&) {});
  int64_t total = 0;
  for (auto v : run.saved_bytes_per_layer.at(0)) total += v;
  const CheckResult ok = memory_verdict(*full.record, peak);
  EXPECT_EQ(ok.outcome, Outcome::pass);
  EXPECT_EQ(ok.detail, "baseline: within budget (" + std::to_string(total) + " bytes saved per micro-batch)");
  const ReadBack bad = dump_with(dir.path() / "d", [](json& j) { j["memory"]["peak"] = 1; });
  EXPECT_EQ(bad.error, (dir.path() / "d" / "dump.json").string() +
                           ": /memory/peak = 1: unknown key 'peak' (allowed: saved_peak, device_peak, workspace_peak)");
}

// The counts kind's baseline pass expecting `pattern` once per micro-batch, never recomputed.
CheckResult counts_verdict(const RunRecord& r, const std::string& pattern) {
  Case c;
  c.expect.counts = {{pattern, 1, 0}};
  const CheckEnv env;
  const GroupLayout layout;
  const CheckContext x{c, env, false, r, layout, nullptr, nullptr, nullptr, {}};
  const CheckKind& k = *find_check_kind("counts");
  std::vector<CheckResult> out;
  run_check_pass(k, k.on_baseline, x, out);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

TEST(DumpSections, CountsAbsentEmptyPartialFull) {
  ScratchDir dir;
  const std::string mod = "layers.0.attention.core";
  ASSERT_EQ(small_run().counts.count(mod), 1u) << "the run counts " << mod;
  ASSERT_GE(small_run().counts.size(), 2u);
  struct Row {
    std::string label;
    std::function<void(json&)> edit;
    Outcome verdict;
    std::string detail;
  };
  const std::vector<Row> rows = {
      {"absent", [](json& j) { j.erase("counts"); }, Outcome::skip,
       "baseline: not applicable: the dump of rcts records no module counts"},
      {"empty", [](json& j) { j["counts"] = json::object(); }, Outcome::fail,
       "baseline: no module matches '" + mod + "'"},
      {"partial: another module only",
       [&](json& j) {
         json kept = json::object();
         for (const auto& [k, v] : j["counts"].items())
           if (k != mod && kept.empty()) kept[k] = v;
         j["counts"] = kept;
       },
       Outcome::fail, "baseline: no module matches '" + mod + "'"},
      {"partial: this module only", [&](json& j) { j["counts"] = {{mod, j["counts"][mod]}}; }, Outcome::pass,
       "baseline: 1 module counters as expected"},
      {"full", [](json&) {}, Outcome::pass, "baseline: 1 module counters as expected"},
  };
  for (const auto& row : rows) {
    const ReadBack b = dump_with(dir.path() / "d", row.edit);
    ASSERT_TRUE(b.record) << row.label << ": " << b.error;
    EXPECT_EQ(b.record->not_recorded.count("counts"), row.label == "absent" ? 1u : 0u) << row.label;
    const CheckResult v = counts_verdict(*b.record, mod);
    EXPECT_EQ(v.outcome, row.verdict) << row.label << ": " << v.detail;
    EXPECT_EQ(v.detail, row.detail) << row.label;
  }
}

TEST(DumpSections, SideEffectsAbsentEmptyPartialFull) {
  ScratchDir dir;
  const RunRecord& base = small_run();  // rcts's record, with its side effects
  ASSERT_GE(base.side_effects.size(), 1u);
  const std::string first = base.side_effects.begin()->first;
  struct Row {
    std::string label;
    std::function<void(json&)> edit;
    Outcome verdict;
    std::vector<std::string> not_judged;
  };
  const std::vector<Row> rows = {
      {"absent", [](json& j) { j.erase("side_effects"); }, Outcome::pass, {"side effects: not recorded by rcts"}},
      {"declared not recorded",
       [](json& j) {
         j.erase("side_effects");
         j["not_recorded"] = {{"side_effects", "not observable"}};
       },
       Outcome::pass,
       {"side effects: not recorded by rcts (not observable)"}},
      {"empty", [](json& j) { j["side_effects"] = json::object(); }, Outcome::fail, {}},
      {"partial", [&](json& j) { j["side_effects"][first] = 0.5; }, Outcome::fail, {}},
      {"full", [](json&) {}, Outcome::pass, {}},
  };
  for (const auto& row : rows) {
    const ReadBack b = dump_with(dir.path() / "d", row.edit);
    ASSERT_TRUE(b.record) << row.label << ": " << b.error;
    const CheckResult v = check_bitwise(base, *b.record, "v");
    EXPECT_EQ(v.outcome, row.verdict) << row.label << ": " << v.detail;
    EXPECT_EQ(v.not_judged, row.not_judged) << row.label;
    if (row.verdict == Outcome::fail) {  // the side effects are what differs, nothing else
      EXPECT_TRUE(v.detail.substr(0, v.detail.find('\n')).ends_with(" differ (side effects)")) << v.detail;
    }
  }
}

TEST(DumpSections, OffloadAbsentEmptyPartialFull) {
  ScratchDir dir;
  const std::string manifest = (dir.path() / "d" / "dump.json").string();
  // Absent: the offload check has nothing to judge and says so.
  const ReadBack absent = dump_with(dir.path() / "d", [](json&) {});
  ASSERT_TRUE(absent.record) << absent.error;
  Case c;
  c.expect.offload = true;
  const CheckEnv env;
  const GroupLayout layout;
  {
    const CheckContext x{c, env, false, *absent.record, layout, nullptr, &*absent.record, &layout, {}};
    EXPECT_EQ(not_applicable(*find_check_kind("offload"), x),
              "the dump of rcts records no offload (neither rcts's offload report nor offloaded_bytes)");
  }
  // Empty and partial reports are refused, naming the first missing field.
  const ReadBack empty = dump_with(dir.path() / "d", [](json& j) { j["rcts"]["offload_report"] = json::object(); });
  EXPECT_EQ(empty.error, manifest + ": /rcts/offload_report = {}: missing field 'by_name'");
  const ReadBack partial_report = dump_with(dir.path() / "d", [](json& j) {
    j["rcts"]["offload_report"] = {{"by_name", json::object()}, {"by_group", json::object()}};
  });
  EXPECT_EQ(partial_report.error,
            manifest + ": /rcts/offload_report = {\"by_group\":{},\"by_name\":{}}: missing field 'tensors'");
  // Offloaded bytes on some micro-batches only are refused; on every one they are read.
  const ReadBack partial = dump_with(dir.path() / "d", [](json& j) {
    j["micro_batches"][0]["offloaded_bytes"] = 64;
    j["micro_batches"][0]["reloaded_bytes"] = 64;
  });
  EXPECT_EQ(partial.error.rfind(manifest + ": /micro_batches = [", 0), 0u) << partial.error;
  EXPECT_TRUE(partial.error.ends_with("...: offloaded_bytes is given for some micro-batches only")) << partial.error;
  const ReadBack full = dump_with(dir.path() / "d", [](json& j) {
    for (int i = 0; i < 2; ++i) {
      j["micro_batches"][i]["offloaded_bytes"] = 64 * (i + 1);
      j["micro_batches"][i]["reloaded_bytes"] = 64 * (i + 1);
    }
  });
  ASSERT_TRUE(full.record) << full.error;
  EXPECT_EQ(full.record->offloaded_bytes, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(full.record->reloaded_bytes, (std::vector<int64_t>{64, 128}));
  const CheckContext x{c, env, false, *full.record, layout, nullptr, &*full.record, &layout, {}};
  EXPECT_EQ(not_applicable(*find_check_kind("offload"), x), std::nullopt);
}

}  // namespace
}  // namespace rcts::harness
