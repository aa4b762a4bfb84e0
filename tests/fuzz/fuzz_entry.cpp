#include "tests/fuzz/fuzz_entry.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "harness/cases/case.hpp"
#include "harness/dumps/dump_v1.hpp"
#include "harness/io/npy.hpp"
#include "harness/golden/golden.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"
#include "reference/memory_model/report.hpp"
#include "reference/memory_model/run_estimate.hpp"

namespace rcts::fuzz {
namespace {

const char* const kSource = "fuzz input";

// What the CLI does with a config before running it, short of running it.
void check_config(const Config& cfg, const std::string& where) {
  validate_or_throw(cfg, where);
  check_run_limits(cfg, where);
  if (cfg.model.num_moe_experts == 0) memory_report_text(cfg);  // the model covers dense layers only
}

}  // namespace

void parse_input(std::string_view data) {
  nlohmann::json j;
  try {
    j = harness::parse_json_text(data, kSource);
  } catch (const Error&) {
    return;
  }
  try {  // as a case file
    const harness::Case c = harness::case_from_json(j, kSource);
    const Config base = config_from_json(c.config, kSource);
    check_config(base, "baseline");
    for (const auto& v : c.variants) check_config(apply_overrides(base, v.patch, kSource), v.name);
  } catch (const Error&) {
  }
  try {  // as a config file
    check_config(config_from_json(j, kSource), kSource);
  } catch (const Error&) {
  }
  try {  // as a golden file
    harness::golden_from_json(j, kSource);
  } catch (const Error&) {
  }
}

}  // namespace rcts::fuzz

namespace rcts::fuzz {

void parse_dump_input(std::string_view data) {
  namespace fs = std::filesystem;
  static const fs::path dir = fs::temp_directory_path() / ("rcts_fuzz_dump_" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  constexpr std::string_view kSplit = "\n--npy--\n";
  const size_t at = data.find(kSplit);
  const std::string_view manifest = data.substr(0, at);
  const std::string_view npy = at == std::string_view::npos ? std::string_view() : data.substr(at + kSplit.size());
  if (npy.size() >= 10) {
    try {
      harness::parse_npy_header_dict(npy.substr(10), "fuzz npy header");
    } catch (const Error&) {
    }
  }
  std::ofstream(dir / harness::kDumpManifest, std::ios::binary) << manifest;
  std::set<std::string> files;  // the plain file names the manifest mentions
  try {
    const std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
      if (j.is_object()) {
        if (j.contains("file") && j["file"].is_string()) files.insert(j["file"].get<std::string>());
        for (const auto& [k, v] : j.items()) walk(v);
      } else if (j.is_array()) {
        for (const auto& v : j) walk(v);
      }
    };
    walk(harness::parse_json_text(manifest, "fuzz manifest"));
  } catch (const Error&) {
  }
  int written = 0;
  for (const auto& f : files) {
    if (f.empty() || f.find('/') != std::string::npos || f[0] == '.' || f.size() > 200 || ++written > 64) continue;
    std::ofstream(dir / f, std::ios::binary) << npy;
  }
  try {
    harness::read_dump(dir);
  } catch (const Error&) {
  }
  fs::remove_all(dir, ec);
}

}  // namespace rcts::fuzz
