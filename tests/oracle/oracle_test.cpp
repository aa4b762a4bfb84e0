// Every single-rank CPU case's baseline against the independent float64 oracle
// (f64_block.hpp): losses, outputs, input gradients, parameter gradients and the SGD
// updates at a stated tolerance, plus, exactly, the parameter initialisation, the
// dropout draws (site, stream, seed, first block, size) and the side effects' keys.
// Golden digests only say "the bits did not change"; this says the bits are (within
// rounding) the documented model, so a scaling or RNG bug cannot be blessed by a
// careless regen. The oracle itself is checked against finite differences first.
//
// Error measure, per tensor: max_i |ref_i - oracle_i| / max_i |oracle_i| (relative to
// the tensor's scale, so near-zero elements do not blow it up); per loss: relative.
// Parameters: with SGD between steps the update (final - initial) is compared, so a
// wrong learning rate shows at the update's scale, not hidden under the weights'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "backends/cpu/cpu_backend.hpp"
#include "harness/cases/case.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"
#include "tests/oracle/f64_block.hpp"

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace rcts::harness {
// gtest names a parameterised case by its id, not by its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.id; }
}  // namespace rcts::harness

namespace rcts::oracle {
namespace {

using Vec = std::vector<double>;

// --- the oracle against finite differences (float64 end to end) ----------------------

Config tiny(const std::string& activation, int experts, bool grouped) {
  Config c;
  c.model.num_layers = 2;
  c.model.hidden_size = 8;
  c.model.num_attention_heads = 2;
  c.model.seq_length = 4;
  c.model.micro_batch_size = 2;
  c.model.ffn_hidden_size = 12;
  c.model.activation = activation;
  c.model.activation_dtype = DType::f64;
  c.model.attention_dropout = 0.2;
  c.model.hidden_dropout = 0.1;
  c.model.num_moe_experts = experts;
  c.model.moe_router_topk = 2;
  c.model.moe_grouped_gemm = grouped;
  c.model.moe_ffn_hidden_size = experts ? 6 : 0;
  c.model.moe_shared_expert_intermediate_size = experts ? 4 : 0;
  c.model.moe_expert_dropout = experts ? 0.1 : 0.0;
  return c;
}

// Central differences of the loss, at a few elements of every parameter and of the
// input, equal the oracle's analytic gradients. Dropout masks are the same in every
// run (fresh streams), so the loss is a smooth function of each value.
void expect_gradients_match_finite_differences(const Config& c) {
  const RankCoords coords;
  const F64Run base = run_f64(c, coords);
  const double h = 1e-6;
  auto fd = [&](const std::string& name, int64_t i) {
    const double up = run_f64(c, coords, Perturbation{name, i, h}).losses.at(0);
    const double down = run_f64(c, coords, Perturbation{name, i, -h}).losses.at(0);
    return (up - down) / (2 * h);
  };
  int checked = 0;
  for (const auto& [name, g] : base.grads) {
    const double scale = std::max(1e-3, *std::max_element(g.begin(), g.end(), [](double a, double b) {
      return std::fabs(a) < std::fabs(b);
    }));
    for (int64_t i : {int64_t{0}, static_cast<int64_t>(g.size()) / 2, static_cast<int64_t>(g.size()) - 1}) {
      EXPECT_NEAR(fd(name, i), g[static_cast<size_t>(i)], 1e-6 * std::fabs(scale)) << name << "[" << i << "]";
      ++checked;
    }
  }
  const Vec& dx = base.input_grads.at(0);
  for (int64_t i : {int64_t{0}, int64_t{5}, static_cast<int64_t>(dx.size()) - 1})
    EXPECT_NEAR(fd("input", i), dx[static_cast<size_t>(i)], 1e-8) << "input[" << i << "]";
  EXPECT_GT(checked, 20);
}

TEST(F64Oracle, DenseGeluMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny("gelu", 0, false)); }
TEST(F64Oracle, DenseSwigluMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny("swiglu", 0, false)); }
TEST(F64Oracle, MoeGroupedMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny("gelu", 4, true)); }
TEST(F64Oracle, MoePerExpertSwigluMatchesFiniteDifferences) {
  expect_gradients_match_finite_differences(tiny("swiglu", 4, false));
}

// MLA (design §14), with and without query compression.
Config tiny_mla(int q_lora_rank) {
  Config c = tiny("gelu", 0, false);
  c.model.multi_latent_attention = true;
  c.model.q_lora_rank = q_lora_rank;
  c.model.kv_lora_rank = 5;
  c.model.qk_head_dim = 3;
  c.model.qk_pos_emb_head_dim = 4;
  c.model.v_head_dim = 2;
  return c;
}
TEST(F64Oracle, MlaMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny_mla(6)); }
TEST(F64Oracle, MlaWithoutQueryCompressionMatchesFiniteDifferences) {
  expect_gradients_match_finite_differences(tiny_mla(0));
}

// --- every single-rank case's baseline against the oracle ----------------------------

// Tolerances on the error measure above, by activation dtype (parameters are f32, f64
// in gradcheck runs). bf16 rounds every op output to 8 significant bits (2^-9 = 2e-3
// relative per rounding) and the errors compound through the layers: the worst tensor
// seen is 3.3e-2 (a layernorm weight gradient at layer 13 of the 16-layer case), most
// are 0.5-1.5e-2; 6e-2 keeps a 1.8x margin, and a 10 % scaling error, a wrong mask or
// a doubled learning rate lands far above it. f32 rounds at 2^-24 (6e-8 relative);
// the worst seen is 7.1e-7 (MoE expert gradients), so 5e-6 (7x). f64 activations
// (gradcheck runs) differ from the oracle by summation order only.
double tolerance(DType act) {
  switch (act) {
    case DType::bf16: return 6e-2;
    case DType::f32: return 5e-6;
    default: return 1e-10;
  }
}

struct Worst {
  double err = 0;
  std::string where;
  void add(double e, const std::string& w) {
    if (e > err || std::isnan(e)) {
      err = e;
      where = w;
    }
  }
};

// max_i (|ref_i - ora_i| - slack_i)^+ / max_i |ora_i|; slack (optional) is what
// storing a value may lose by itself.
double rel_err(const Vec& ref, const Vec& ora, const Vec* slack = nullptr) {
  if (ref.size() != ora.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i])) return NAN;
    diff = std::max(diff, std::fabs(ref[i] - ora[i]) - (slack ? (*slack)[i] : 0.0));
    scale = std::max(scale, std::fabs(ora[i]));
  }
  if (scale == 0) return diff <= 0 ? 0 : INFINITY;
  return std::max(diff, 0.0) / scale;
}

// One unit in the last place of |v| in the parameter dtype.
double ulp(DType param, double v) {
  if (param == DType::f32) {
    const float f = static_cast<float>(std::fabs(v));
    return static_cast<double>(std::nextafter(f, INFINITY)) - static_cast<double>(f);
  }
  return std::nextafter(std::fabs(v), INFINITY) - std::fabs(v);
}

std::string mb_label(const Config& c, size_t i) {
  return "step " + std::to_string(static_cast<int>(i) / c.run.micro_batches) + " micro-batch " +
         std::to_string(static_cast<int>(i) % c.run.micro_batches);
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

// Routing is discontinuous: a token whose k-th and (k+1)-th router probabilities are
// closer than the run's rounding can resolve may pick another expert in the rounded
// run, and no tolerance covers that. Below this gap (absolute probability, from the
// oracle's own routing) the comparison runs the same case with f32 activations.
double routing_resolution(DType act) {
  switch (act) {
    case DType::bf16: return 1e-2;  // ~5 bf16 roundings (2^-9 each) of a logit near 1
    case DType::f32: return 1e-5;
    default: return 0;
  }
}

// Compares one configuration's reference run with the oracle; returns the report line.
std::string compare_with_oracle(const std::string& id, const Config& cfg, const RunRecord& ref, const F64Run& ora) {
  // GDN layers (design §15) chain more roundings per layer (conv, rule, gated norm) and
  // their conv weight gradients cancel over every token: 4x (docs/decisions.md).
  const double tol = tolerance(cfg.model.activation_dtype) * (cfg.model.gated_delta_net ? 4.0 : 1.0);

  // Exact: the dropout draws (site, stream, seed, first block, size) in order.
  std::vector<const MaskRecord*> draws;
  for (const auto& m : ref.masks)
    if (!m.recompute) draws.push_back(&m);
  EXPECT_EQ(draws.size(), ora.draws.size()) << id << ": dropout draws in the reference vs the oracle";
  for (size_t i = 0; i < draws.size() && i < ora.draws.size(); ++i) {
    const MaskRecord& m = *draws[i];
    const Draw& o = ora.draws[i];
    if (m.site == o.site && m.generator == o.stream && m.seed == o.seed && m.offset == o.offset && m.numel == o.numel)
      continue;
    ADD_FAILURE() << id << ": dropout draw " << i << ": reference " << m.site << " from '" << m.generator << "' seed "
                  << m.seed << " block " << m.offset << " n " << m.numel << "; oracle " << o.site << " from '"
                  << o.stream << "' seed " << o.seed << " block " << o.offset << " n " << o.numel;
    break;
  }
  std::vector<std::string> ref_keys, ora_keys;
  for (const auto& [k, v] : ref.side_effects) ref_keys.push_back(k);
  for (const auto& [k, v] : ora.side_effects) ora_keys.push_back(k);
  EXPECT_EQ(ref_keys, ora_keys) << id << ": side effects";

  Worst loss, output, dinput, grad, update, side;
  EXPECT_EQ(ref.losses.size(), ora.losses.size()) << id << ": micro-batches";
  for (size_t i = 0; i < ref.losses.size() && i < ora.losses.size(); ++i) {
    loss.add(std::fabs(ref.losses[i] - ora.losses[i]) / std::fabs(ora.losses[i]), "loss " + mb_label(cfg, i));
    output.add(rel_err(to_vector<double>(ref.outputs[i]), ora.outputs[i]), "output " + mb_label(cfg, i));
    if (cfg.run.training)
      dinput.add(rel_err(to_vector<double>(ref.input_grads[i]), ora.input_grads[i]), "input grad " + mb_label(cfg, i));
  }
  for (const auto& [k, v] : ref.side_effects)
    if (ora.side_effects.count(k))
      side.add(std::fabs(v - ora.side_effects.at(k)) / std::max(std::fabs(ora.side_effects.at(k)), 1e-300), k);
  const bool updated = cfg.run.training && cfg.run.steps > 1;
  EXPECT_EQ(ref.params.size(), ora.params.size()) << id << ": parameter count";
  for (size_t i = 0; i < ref.params.size(); ++i) {
    const std::string& name = ref.params[i].name;
    if (!ora.params.count(name)) {
      ADD_FAILURE() << id << ": the oracle has no parameter '" << name << "'";
      continue;
    }
    const Vec value = to_vector<double>(ref.params[i].tensor);
    const Vec& init = ora.initial.at(name);
    if (value.size() != init.size()) {
      ADD_FAILURE() << id << ": " << name << " has " << value.size() << " elements, the oracle " << init.size();
      continue;
    }
    if (!updated) {
      // Untouched parameters must be the documented initialisation, bit for bit.
      for (size_t j = 0; j < value.size(); ++j)
        if (value[j] != init[j]) {
          ADD_FAILURE() << id << ": " << name << "[" << j << "] = " << value[j]
                        << " is not the name-keyed initial value " << init[j];
          break;
        }
    } else {
      // The stored weight rounds once per SGD step: allow one ulp of it per step.
      Vec ref_delta(value.size()), ora_delta(value.size()), slack(value.size());
      for (size_t j = 0; j < value.size(); ++j) {
        ref_delta[j] = value[j] - init[j];
        ora_delta[j] = ora.params.at(name)[j] - init[j];
        slack[j] = (cfg.run.steps - 1) * ulp(cfg.param_dtype(), std::max(std::fabs(value[j]), std::fabs(init[j])));
      }
      update.add(rel_err(ref_delta, ora_delta, &slack), name + " (SGD update)");
    }
    grad.add(rel_err(to_vector<double>(ref.grads[i].tensor), ora.grads.at(name)), ref.grads[i].name);
  }

  std::ostringstream report;
  report << id << " [" << dtype_name(cfg.model.activation_dtype) << ", tolerance " << fmt(tol)
         << "] max relative error: loss " << fmt(loss.err) << ", output " << fmt(output.err) << ", input grad "
         << fmt(dinput.err) << ", param grad " << fmt(grad.err)
         << (updated ? ", SGD update " + fmt(update.err) : std::string(", params = initial values")) << ", side effects "
         << fmt(side.err);
  if (std::isfinite(ora.min_router_margin)) report << ", router margin " << fmt(ora.min_router_margin);
  for (const Worst* w : {&loss, &output, &dinput, &grad, &update, &side})
    EXPECT_LE(w->err, tol) << id << ": " << w->where << " differs from the f64 oracle by " << fmt(w->err)
                           << " of its scale (tolerance " << fmt(tol) << ")\n" << report.str();
  return report.str();
}

class CaseVsOracle : public ::testing::TestWithParam<harness::Case> {};

TEST_P(CaseVsOracle, BaselineMatchesTheF64Oracle) {
  const harness::Case& c = GetParam();
  Config cfg = config_from_json(c.config, c.file.string() + " (config)");
  validate_or_throw(cfg, c.file.string());
  if (auto unsupported = check_supported(cfg); !unsupported.empty())
    GTEST_SKIP() << c.id << ": the reference does not implement " << unsupported.front().message;
  if (const std::string why = f64_unsupported(cfg); !why.empty()) GTEST_SKIP() << c.id << ": " << why;

  F64Run ora = run_f64(cfg, c.seed_ranks);
  std::string id = c.id;
  if (ora.min_router_margin < routing_resolution(cfg.model.activation_dtype)) {
    const std::string why = "router probabilities " + fmt(ora.min_router_margin) + " apart, closer than " +
                            std::string(dtype_name(cfg.model.activation_dtype)) + " rounding resolves (" +
                            fmt(routing_resolution(cfg.model.activation_dtype)) + ")";
    if (cfg.model.activation_dtype != DType::bf16) GTEST_SKIP() << c.id << ": " << why;
    std::cout << "  " << c.id << ": " << why << ": compared with f32 activations instead\n";
    cfg.model.activation_dtype = DType::f32;
    ora = run_f64(cfg, c.seed_ranks);
    id += " (as f32)";
    if (ora.min_router_margin < routing_resolution(DType::f32))
      GTEST_SKIP() << c.id << ": router probabilities " << fmt(ora.min_router_margin) << " apart even in f32";
  }
  if (cfg.model.gated_delta_net && cfg.model.activation_dtype == DType::bf16) {
    std::cout << "  " << c.id << ": GDN layers in bf16 round too often for the bf16 tolerance: compared with f32 "
                                 "activations instead\n";
    cfg.model.activation_dtype = DType::f32;
    ora = run_f64(cfg, c.seed_ranks);
    id += " (as f32)";
  }
  const RunRecord ref = execute(cfg, cpu::default_backend(), c.seed_ranks);
  std::cout << "  " << compare_with_oracle(id, cfg, ref, ora) << "\n";
}

// The cases a single CPU process runs (config_error cases reject their config and
// multi-rank cases need mpiexec: neither has a single-rank baseline to compare).
std::vector<harness::Case> single_rank_cases() {
  std::vector<harness::Case> out;
  for (auto& c : harness::load_cases({std::filesystem::path(RCTS_SOURCE_DIR) / "cases"})) {
    if (c.expect.config_error) continue;
    if (std::find(c.ranks.begin(), c.ranks.end(), 1) == c.ranks.end()) continue;
    if (std::find(c.backends.begin(), c.backends.end(), "cpu") == c.backends.end()) continue;
    out.push_back(std::move(c));
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<harness::Case>& info) {
  std::string id = info.param.id;
  for (auto& ch : id)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return id;
}

INSTANTIATE_TEST_SUITE_P(Cases, CaseVsOracle, ::testing::ValuesIn(single_rank_cases()), case_name);

}  // namespace
}  // namespace rcts::oracle
