#include "reference/config/refusals.hpp"

#include <algorithm>

namespace rcts {
namespace {

std::string pp_of(const Config& c) {
  return "parallel.pipeline_model_parallel_size = " + std::to_string(c.parallel.pipeline_model_parallel_size);
}
bool pp(const Config& c) { return c.parallel.pipeline_model_parallel_size > 1; }
bool fp8(const Config& c) { return c.model.fp8.has_value(); }
bool offloads(const Config& c, const char* module) {
  const auto& m = c.offload.offload_modules;
  return c.offload.fine_grained_activation_offloading && std::find(m.begin(), m.end(), module) != m.end();
}

}  // namespace

const std::vector<Refusal>& refusals() {
  static const std::vector<Refusal> table = {
      // --- pipeline parallelism (design §16) ---
      {"pp.fine_grained_offload", {"offload.fine_grained_activation_offloading", "parallel.pipeline_model_parallel_size"},
       [](const Config& c) { return pp(c) && c.offload.fine_grained_activation_offloading; },
       [](const Config& c) { return "offload.fine_grained_activation_offloading with " + pp_of(c); },
       "megatron/core/pipeline_parallel/fine_grained_activation_offload.py",
       "Megatron-LM keeps one chunk handler per micro-batch in flight, queued in backward order, with a per-chunk "
       "margin; the reference's offload manager has one iteration in flight and a per-name margin"},
      // --- multi-latent attention (design §14) ---
      {"mla.sequence_parallel", {"parallel.sequence_parallel"},
       [](const Config& c) { return c.model.multi_latent_attention && c.parallel.sequence_parallel; },
       [](const Config&) { return std::string("MLA with parallel.sequence_parallel = true"); },
       "megatron/core/transformer/multi_latent_attention.py",
       "MLA's down-projections are replicated over TP; under SP Megatron-LM gathers their shard input and scatters "
       "the compressed q back to the shard, which the reference's MLA layer and its memory model do not do"},
      {"mla.fp8", {"model.fp8"},
       [](const Config& c) { return c.model.multi_latent_attention && fp8(c); },
       [](const Config&) { return std::string("MLA with model.fp8"); },
       "megatron/core/transformer/multi_latent_attention.py",
       "the reference's FP8 emulation quantizes the dense attention's linear inputs only, not MLA's down- and "
       "up-projections"},
      {"mla.gdn", {"model.multi_latent_attention", "model.gated_delta_net"},
       [](const Config& c) { return c.model.multi_latent_attention && c.model.gated_delta_net; },
       [](const Config&) { return std::string("MLA with model.gated_delta_net = true"); },
       "megatron/core/models/gpt/experimental_attention_variant_module_specs.py",
       "hybrid MLA + GDN models: the memory model and the oracle cover each token mixer alone"},
      // --- gated delta net (design §15) ---
      {"gdn.fp8", {"model.fp8", "model.gated_delta_net"},
       [](const Config& c) { return c.model.gated_delta_net && fp8(c); },
       [](const Config&) { return std::string("model.fp8 with model.gated_delta_net = true"); },
       "megatron/core/ssm/gated_delta_net/common.py",
       "the reference's GDN layer has no FP8 sites: its projections are not quantized"},
      // --- the fused attention (design §11) ---
      {"flash.mla", {"model.flash_attention", "model.multi_latent_attention"},
       [](const Config& c) { return c.model.flash_attention && c.model.multi_latent_attention; },
       [](const Config&) { return std::string("model.flash_attention with MLA"); },
       "megatron/core/extensions/transformer_engine.py",
       "the backends' fused attention takes one head dim; MLA's keys and values have two (k_channels, v_channels)"},
      {"flash.offload_core_attn", {"model.flash_attention", "offload.offload_modules"},
       [](const Config& c) { return c.model.flash_attention && offloads(c, "core_attn"); },
       [](const Config&) { return std::string("offload_modules core_attn with model.flash_attention = true"); },
       "megatron/core/transformer/attention.py",
       "the fused attention's saved output is the projection's input, which the layer reads after the core_attn "
       "group is committed (and released)"},
      {"flash.gdn", {"model.flash_attention", "model.gated_delta_net"},
       [](const Config& c) { return c.model.flash_attention && c.model.gated_delta_net; },
       [](const Config&) { return std::string("model.flash_attention with model.gated_delta_net = true"); },
       "megatron/core/models/gpt/experimental_attention_variant_module_specs.py",
       "the attention layers of a hybrid pattern are not wired to the backends' fused attention"},
      // --- FP8 (design §12) ---
      {"fp8.tensorwise", {"model.fp8_recipe"},
       [](const Config& c) { return fp8(c) && c.model.fp8_recipe == "tensorwise"; },
       [](const Config&) { return std::string("model.fp8_recipe = tensorwise with model.fp8"); },
       "megatron/core/fp8_utils.py",
       "the reference emulates delayed scaling only; current (tensorwise) scaling takes each tensor's own amax"},
      {"fp8.tensor_parallel", {"parallel.tensor_model_parallel_size"},
       [](const Config& c) { return fp8(c) && c.parallel.tensor_model_parallel_size > 1; },
       [](const Config& c) {
         return "parallel.tensor_model_parallel_size = " + std::to_string(c.parallel.tensor_model_parallel_size) +
                " with model.fp8";
       },
       "megatron/core/extensions/transformer_engine.py",
       "Transformer Engine reduces the amax over the tensor-parallel group; the reference's emulation keeps one "
       "rank's amax history"},
      {"fp8.moe", {"model.num_moe_experts"},
       [](const Config& c) { return fp8(c) && c.model.num_moe_experts > 0; },
       [](const Config& c) { return "model.num_moe_experts = " + std::to_string(c.model.num_moe_experts) + " with model.fp8"; },
       "megatron/core/transformer/moe/experts.py",
       "the reference's FP8 emulation covers the dense layers' linears, not the experts' grouped GEMMs"},
      {"fp8.f64", {"model.activation_dtype"},
       [](const Config& c) { return fp8(c) && c.model.activation_dtype == DType::f64; },
       [](const Config&) { return std::string("model.activation_dtype = f64 with model.fp8"); }, nullptr,
       "Megatron-LM has no float64 activations: f64 is rcts's gradcheck mode, which FP8 rounding would defeat"},
  };
  return table;
}

}  // namespace rcts
