#include "harness/cli/block_view.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "harness/cli/view_json.hpp"
#include "harness/io/provenance.hpp"
#include "harness/io/version.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/saved_bytes.hpp"
#include "reference/recompute/plan.hpp"

namespace rcts::harness {

BlockSummary summarize_block(const Config& cfg, const RunRecord& r, const Backend& backend, double seconds) {
  BlockSummary b;
  b.config = cfg;
  b.backend = backend.name();
  b.backend_description = backend.description();
  b.plan = r.plan;
  b.losses = r.losses;
  for (const auto& g : r.grads) {
    double s = 0;
    for (double x : to_vector<double>(g.tensor)) s += x * x;
    b.gradient_norms.emplace_back(g.name, std::sqrt(s));
  }
  b.saved_bytes_per_layer = r.saved_bytes_per_layer.at(0);
  for (const SaveRecord* s : distinct_forward_saves(r.saves, "layers.0.")) b.layer0_saved_bytes[s->key()] += s->bytes;
  b.device_peak = r.device_peak;
  b.workspace_peak = r.workspace_peak;
  b.seconds = seconds;
  return b;
}

std::string block_text(const BlockSummary& b) {
  std::ostringstream os;
  const auto& m = b.config.model;
  os << "rcts " << kVersion << " (" << run_git_sha() << ")  dense block, backend " << b.backend << " ("
     << b.backend_description << ")\n"
     << "  L=" << m.num_layers << " h=" << m.hidden_size << " a=" << m.num_attention_heads << " s=" << m.seq_length
     << " b=" << m.micro_batch_size << " ffn=" << m.ffn_hidden_size << " " << m.activation << " "
     << dtype_name(m.activation_dtype) << " dropout " << m.attention_dropout << "/" << m.hidden_dropout
     << "  recompute " << b.config.recompute.recompute_granularity.value_or("none") << "  plan " << plan_str(b.plan)
     << "\n\n";
  os << std::setprecision(9);
  for (size_t i = 0; i < b.losses.size(); ++i) os << "  loss[micro-batch " << i << "] = " << b.losses[i] << "\n";
  os << "\n  gradient norms (last step, accumulated):\n";
  for (const auto& [name, norm] : b.gradient_norms)
    os << "    " << std::left << std::setw(44) << name << std::right << std::setw(16) << norm << "\n";
  os << "\n  saved bytes per layer (micro-batch 0): ";
  for (auto bytes : b.saved_bytes_per_layer) os << bytes << ' ';
  os << "\n  saved tensors of layer 0:\n";
  const int64_t sbh = int64_t{m.seq_length} * m.micro_batch_size * m.hidden_size;
  for (const auto& [k, bytes] : b.layer0_saved_bytes)
    os << "    " << std::left << std::setw(44) << k << std::right << std::setw(12) << bytes << "  ("
       << std::setprecision(4) << static_cast<double>(bytes) / static_cast<double>(sbh) << " sbh)\n";
  os << "\n  device peak " << b.device_peak << " bytes (op scratch held at once: " << b.workspace_peak
     << " bytes of workspace); wall time " << std::setprecision(3) << b.seconds << " s\n";
  return os.str();
}

nlohmann::json block_json(const BlockSummary& b) {
  nlohmann::json out = view_head("rcts-block");
  out["backend"] = b.backend;
  out["config"] = config_to_json(b.config);
  out["plan"] = plan_json(b.plan);
  out["losses"] = b.losses;
  nlohmann::json norms = nlohmann::json::array();
  for (const auto& [name, norm] : b.gradient_norms) norms.push_back({{"name", name}, {"norm", norm}});
  out["gradient_norms"] = norms;
  out["saved_bytes_per_layer"] = b.saved_bytes_per_layer;
  out["layer0_saved_bytes"] = b.layer0_saved_bytes;
  out["device_peak_bytes"] = b.device_peak;
  out["workspace_peak_bytes"] = b.workspace_peak;
  out["timing"] = {{"seconds", b.seconds}};
  return out;
}

}  // namespace rcts::harness
