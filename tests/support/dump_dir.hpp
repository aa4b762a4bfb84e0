// The dump directory that tests of rcts's dump reader start from: a baseline dump that
// rcts's own writer makes of a small run, whose manifest (dump.json) or tensor files a
// test then edits to show what the reader or `rcts check` makes of the edit. One home
// for that setup, so the run it records, its meta and the way an edit is written back
// are the same in every such test. It needs the dump format (rcts_harness_dumps) and the
// CPU backend; dump_source.hpp adds how `rcts check` takes such a dump (the run layer).
#pragma once
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.hpp"
#include "harness/dumps/dump_v1.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/npy.hpp"
#include "reference/core/error.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts::test_support {

// One dense layer (h = 16, a = 2, s = 8, b = 2, ffn = 32) over `micro_batches`
// micro-batches on the reference CPU backend, with every record a dump holds; run once
// per count and kept for the test binary's life.
inline const RunRecord& dump_run(int micro_batches) {
  static std::map<int, RunRecord> runs;
  auto it = runs.find(micro_batches);
  if (it == runs.end()) {
    it = runs.emplace(micro_batches, run_cpu_recorded(dense({.layers = 1, .ffn = 32, .micro_batches = micro_batches})))
             .first;
  }
  return it->second;
}

// `run` written by rcts's dump writer into `dir` as run "baseline" of case "test.case".
inline void write_baseline_dump(const std::filesystem::path& dir, const RunRecord& run) {
  harness::DumpMeta m;
  m.case_id = "test.case";
  m.run = "baseline";
  m.role = "baseline";
  harness::write_dump(dir, m, run);
}

// The refusal read_dump gives the dump in `dir` (what(): the message and where it was
// raised), or "(read_dump accepted the dump)".
inline std::string read_dump_error(const std::filesystem::path& dir) {
  try {
    harness::read_dump(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(read_dump accepted the dump)";
}

inline nlohmann::json read_manifest(const std::filesystem::path& dir) {
  std::ifstream in(dir / "dump.json");
  return nlohmann::json::parse(in);
}
inline void write_manifest(const std::filesystem::path& dir, const nlohmann::json& j) {
  std::ofstream(dir / "dump.json") << j.dump(1);
}

// `dir` emptied, then the baseline dump of `run` in it with its manifest edited by `edit`.
inline void write_edited_dump(const std::filesystem::path& dir, const RunRecord& run,
                              const std::function<void(nlohmann::json&)>& edit) {
  std::filesystem::remove_all(dir);
  write_baseline_dump(dir, run);
  nlohmann::json j = read_manifest(dir);
  edit(j);
  write_manifest(dir, j);
}

// Rewrites manifest entry `e` of the dump in `dir` to hold `t`, consistently: its file,
// shape, dtype and sha256.
inline void put_tensor(const std::filesystem::path& dir, nlohmann::json& e, const Tensor& t) {
  const std::filesystem::path file = dir / e["file"].get<std::string>();
  std::filesystem::remove(file);
  harness::write_npy(file, t);
  e["shape"] = t.shape();
  e["dtype"] = std::string(dtype_name(t.dtype()));
  e["sha256"] = harness::sha256_hex(t.numel() ? t.bytes() : nullptr, static_cast<size_t>(t.nbytes()));
}

}  // namespace rcts::test_support
