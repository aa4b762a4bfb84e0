// An independent, naive float64 implementation of the rcts model (pre-LN GPT block,
// dense MLP or MoE, loss, gradient accumulation, SGD between steps), written from the
// documented rules only: design §4 (forward order), §5 (streams and seeds),
// docs/decisions.md (dropout stream rule, name-keyed parameters and data, loss, SGD),
// the layouts in the module headers (QKV rows [q | k | v] head-major, (s, b) token
// order, SwiGLU [a | b], MoE send order and combine). Plain loops over std::vector,
// libm allowed; nothing from kernels/ or reference/modules is called. Dropout masks
// come from the suite's own Philox (oracle/philox_masks.hpp), not the reference's.
//
// What the oracle rounds: inputs and targets to the activation dtype and parameters
// to the parameter dtype, because those ARE the data the run starts from. Every
// computed value stays in float64, unrounded; a rounded run differs from it by its
// rounding alone, which is what the comparison's tolerance bounds.
//
// Scope: one rank (TP = EP = ETP = PP = 1, no sequence parallelism); dense layers
// (GeLU tanh form, SwiGLU) and MoE layers (top-k router, grouped or per-expert
// experts, expert dropout, shared experts, aux loss as a side effect). Recompute and
// offload settings are ignored on purpose: they must not change a single value.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reference/config/config.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts::oracle {

// One dropout draw the oracle made (site, stream name and seed, first block, size).
struct Draw {
  std::string site, stream;
  uint64_t seed = 0, offset = 0;
  int64_t numel = 0;
};

struct F64Run {
  std::vector<double> losses;                              // per (step, micro-batch)
  std::vector<std::vector<double>> outputs, input_grads;   // per (step, micro-batch); no grads in eval
  std::map<std::string, std::vector<double>> initial;      // parameters as initialised (param dtype values)
  std::map<std::string, std::vector<double>> params;       // after the run (SGD between steps)
  std::map<std::string, std::vector<double>> grads;        // the last step's accumulated gradients
  std::map<std::string, double> side_effects;              // "<layer>.tokens_seen", "<moe>.aux_loss"
  std::vector<Draw> draws;                                 // every dropout draw, in order
  // MoE: the smallest gap between a token's k-th chosen and best unchosen router
  // probability (how close the oracle's routing came to a different choice).
  double min_router_margin = INFINITY;
};

// Added to one value before the run: a parameter element (by name) or, with name
// "input", element `index` of step 0 micro-batch 0's input. For finite differences.
struct Perturbation {
  std::string name;
  int64_t index = 0;
  double delta = 0;
};

// Why the oracle cannot model `c` at one rank; empty when it can.
std::string f64_unsupported(const Config& c);

// `coords` are the rank coordinates the streams are seeded for (a case's seed_ranks).
F64Run run_f64(const Config& c, const RankCoords& coords, const std::optional<Perturbation>& perturb = std::nullopt);

}  // namespace rcts::oracle
