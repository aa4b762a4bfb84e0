// What the reference still refuses (reference/config/refusals.hpp), listed with whether
// Megatron-LM trains it: every entry has a reason and a Megatron-LM file or none, a
// meaningful config here that triggers it, and check_supported() refuses nothing that
// is not an entry.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "reference/config/refusals.hpp"
#include "reference/config/validate.hpp"

namespace rcts {
namespace {

using Mutate = std::function<void(Config&)>;

void tp2_sp(Config& c) {
  c.parallel.tensor_model_parallel_size = 2;
  c.parallel.sequence_parallel = true;
}
void pp2(Config& c) {
  c.model.num_layers = 4;
  c.parallel.pipeline_model_parallel_size = 2;
}
void moe(Config& c) { c.model.num_moe_experts = 4; }
void mla(Config& c) { c.model.multi_latent_attention = true; }
void gdn(Config& c) {
  c.model.gated_delta_net = true;
  c.model.linear_attention_freq = 2;
}
void fp8(Config& c) { c.model.fp8 = "e4m3"; }
void offload(Config& c, const char* module) {
  c.offload.fine_grained_activation_offloading = true;
  c.offload.offload_modules = {module};
}

// The smallest meaningful config that uses each refused combination, by entry id.
const std::map<std::string, Mutate>& examples() {
  static const std::map<std::string, Mutate> e = {
      {"pp.fine_grained_offload", [](Config& c) { pp2(c); offload(c, "attn_norm"); }},
      {"mla.sequence_parallel", [](Config& c) { mla(c); tp2_sp(c); }},
      {"mla.fp8", [](Config& c) { mla(c); fp8(c); }},
      {"mla.gdn", [](Config& c) { mla(c); gdn(c); }},
      {"gdn.fp8", [](Config& c) { gdn(c); fp8(c); }},
      {"flash.mla", [](Config& c) { c.model.flash_attention = true; mla(c); }},
      {"flash.offload_core_attn", [](Config& c) { c.model.flash_attention = true; offload(c, "core_attn"); }},
      {"flash.gdn", [](Config& c) { c.model.flash_attention = true; gdn(c); }},
      {"fp8.tensorwise", [](Config& c) { fp8(c); c.model.fp8_recipe = "tensorwise"; }},
      {"fp8.tensor_parallel", [](Config& c) { fp8(c); c.parallel.tensor_model_parallel_size = 2; }},
      {"fp8.moe", [](Config& c) { fp8(c); moe(c); }},
      {"fp8.f64", [](Config& c) { fp8(c); c.model.activation_dtype = DType::f64; }},
  };
  return e;
}

const Refusal* entry_of(const ConfigIssue& i) {
  for (const Refusal& r : refusals())
    if (i.fields == r.fields && i.message.find(r.why) != std::string::npos) return &r;
  return nullptr;
}

TEST(Refusals, EachEntrySaysWhyAndWhetherMegatronTrainsIt) {
  std::set<std::string> ids;
  std::cout << "What the reference refuses (feature.not_implemented):\n";
  for (const Refusal& r : refusals()) {
    SCOPED_TRACE(r.id);
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id";
    EXPECT_FALSE(r.fields.empty());
    ASSERT_NE(r.why, nullptr);
    EXPECT_GE(std::string(r.why).size(), 30u) << "a reason names what the reference lacks";
    if (r.megatron_file) {
      const std::string f = r.megatron_file;
      EXPECT_TRUE(f.starts_with("megatron/") && f.ends_with(".py")) << f;
    }
    std::cout << "  " << r.id << ": Megatron-LM "
              << (r.megatron_file ? std::string("trains it (") + r.megatron_file + ")" : std::string("does not"))
              << "; why the reference cannot: " << r.why << "\n";
  }
}

TEST(Refusals, EachEntryHasAMeaningfulConfigThatItRefuses) {
  std::set<std::string> table, examples_for;
  for (const Refusal& r : refusals()) table.insert(r.id);
  for (const auto& [id, use] : examples()) examples_for.insert(id);
  EXPECT_EQ(table, examples_for) << "every refusal needs an example here, every example an entry";
  for (const Refusal& r : refusals()) {
    auto it = examples().find(r.id);
    if (it == examples().end()) continue;
    SCOPED_TRACE(r.id);
    Config c;
    EXPECT_FALSE(r.uses(c));
    it->second(c);
    const auto problems = validate(c);
    EXPECT_TRUE(problems.empty()) << problems.front().code << ": " << problems.front().message;
    EXPECT_TRUE(r.uses(c));
    bool refused = false;
    for (const auto& i : check_supported(c, Supported::everything())) {
      EXPECT_EQ(i.code, kFeatureNotImplemented);
      refused = refused || entry_of(i) == &r;
    }
    EXPECT_TRUE(refused) << "check_supported does not refuse it";
  }
}

// Every pair of the features below: whatever check_supported() refuses with everything
// switched on is an entry of the table (a refusal added beside it has no reason).
TEST(Refusals, NothingIsRefusedOutsideTheTable) {
  const std::vector<std::pair<const char*, Mutate>> features = {
      {"pp2", pp2}, {"tp2_sp", tp2_sp}, {"tp2", [](Config& c) { c.parallel.tensor_model_parallel_size = 2; }},
      {"moe", moe}, {"mla", mla}, {"gdn", gdn}, {"fp8", fp8},
      {"tensorwise", [](Config& c) { fp8(c); c.model.fp8_recipe = "tensorwise"; }},
      {"f64", [](Config& c) { c.model.activation_dtype = DType::f64; }},
      {"flash", [](Config& c) { c.model.flash_attention = true; }},
      {"offload_attn_norm", [](Config& c) { offload(c, "attn_norm"); }},
      {"offload_core_attn", [](Config& c) { offload(c, "core_attn"); }},
      {"cpu_offloading", [](Config& c) { c.offload.cpu_offloading = true; c.offload.cpu_offloading_num_layers = 1; }},
      {"swiglu", [](Config& c) { c.model.activation = "swiglu"; }},
  };
  int refused = 0;
  for (size_t a = 0; a < features.size(); ++a)
    for (size_t b = a; b < features.size(); ++b) {
      Config c;
      features[a].second(c);
      features[b].second(c);
      for (const auto& i : check_supported(c, Supported::everything())) {
        ++refused;
        EXPECT_NE(entry_of(i), nullptr) << features[a].first << " x " << features[b].first
                                        << ": refused outside refusals(): " << i.message;
      }
    }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace rcts
