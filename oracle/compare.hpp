// A reference run against the float64 oracle (f64_block.hpp), as a verdict rather than
// test assertions, so both the oracle test (tests/oracle) and `rcts regen-golden`
// (which must not bless a golden whose baseline disagrees with it; design §10) judge
// with one rule. Exact: the dropout draws (site, stream, seed, first block, size) and
// the side effects' keys. At a tolerance: losses, outputs, input gradients, parameter
// gradients and SGD updates, each as max |ref - oracle| / max |oracle| per tensor
// (tolerances and why in docs/decisions.md).
#pragma once
#include <string>
#include <vector>

#include "oracle/f64_block.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::oracle {

struct OracleComparison {
  std::vector<std::string> failures;  // empty: the run is the documented model within rounding
  std::string report;                 // one line: the worst relative error per quantity
};

// The tolerance for a run with activations `act` (GDN layers: 4x, docs/decisions.md).
double oracle_tolerance(DType act, bool gdn);

// `id` labels the messages.
OracleComparison compare_with_oracle(const std::string& id, const Config& cfg, const RunRecord& ref, const F64Run& ora);

// How one config is compared: the oracle's run, and the config the reference must run
// for it (routing closer than bf16 resolves, and GDN in bf16, are compared with f32
// activations instead). `skip` says why the oracle does not apply; empty when it does.
struct OraclePlan {
  std::string skip;
  std::string note;  // why the activation dtype changed, if it did
  Config config;
  std::string id;
  F64Run run;
};
OraclePlan plan_oracle_comparison(const std::string& id, const Config& cfg, const RankCoords& coords);

}  // namespace rcts::oracle
