// What `rcts block` reports of one run of the dense block, as one value rendered as text
// or as JSON (`--json`, docs/json-report.md): both forms print the same facts because
// they read the same summary.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/backend/backend.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::harness {

struct BlockSummary {
  Config config;
  std::string backend, backend_description;
  std::vector<Segment> plan;
  std::vector<double> losses;                                // per micro-batch
  std::vector<std::pair<std::string, double>> gradient_norms;  // last step, accumulated
  std::vector<int64_t> saved_bytes_per_layer;                // micro-batch 0
  std::map<std::string, int64_t> layer0_saved_bytes;         // per tensor, each storage once
  int64_t device_peak = 0, workspace_peak = 0;
  double seconds = 0;  // wall time of the run (JSON "timing": differs run to run)
};

BlockSummary summarize_block(const Config& cfg, const RunRecord& r, const Backend& backend, double seconds);

// The human summary: header, losses, gradient norms, saved bytes, peaks.
std::string block_text(const BlockSummary& b);
// {"schema": "rcts-block", config, losses, gradient norms, saved bytes, peaks, "timing"}.
nlohmann::json block_json(const BlockSummary& b);

}  // namespace rcts::harness
