// The dump directory of dump_dir.hpp as `rcts check` takes it (harness/run's DumpSource):
// for tests of the run layer only, which links rcts_harness_run.
#pragma once
#include <filesystem>
#include <string>

#include "harness/run/dump_check.hpp"
#include "reference/core/error.hpp"
#include "tests/support/dump_dir.hpp"

namespace rcts::test_support {

// The baseline dump in `dir` as `rcts check` takes it: a world of one, matched with
// `config` on rank 0. "" when accepted, else the refusal's message.
inline std::string dump_check_error(const std::filesystem::path& dir, const Config& config) {
  const harness::DumpGroup g{"test.case", "cpu", 1, {{{0, "baseline"}, dir}}};
  harness::Case c;
  c.id = "test.case";
  try {
    harness::DumpSource(g, 0).record(c, "baseline", config, {});
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

}  // namespace rcts::test_support
