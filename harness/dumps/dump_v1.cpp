// Dump format 1's names: Megatron-LM's name of each rcts parameter (the manifest's
// megatron_name) and where `rcts run --dump` puts a run. The writer is dump_write.cpp,
// the reader dump_read.cpp.
#include "harness/dumps/dump_v1.hpp"

#include <utility>
#include <vector>

#include "harness/io/safe_name.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

std::string megatron_name(const std::string& name) {
  // layers.<i>.<rest>
  if (name.rfind("layers.", 0) != 0) return {};
  const auto dot = name.find('.', 7);
  if (dot == std::string::npos) return {};
  const std::string layer = name.substr(0, dot), rest = name.substr(dot + 1);
  static const std::vector<std::pair<std::string, std::string>> map = {
      {"input_layernorm.", "input_layernorm."},
      {"attention.qkv.", "self_attention.linear_qkv."},
      {"attention.proj.", "self_attention.linear_proj."},
      {"pre_mlp_layernorm.", "pre_mlp_layernorm."},
      {"mlp.fc1.", "mlp.linear_fc1."},
      {"mlp.fc2.", "mlp.linear_fc2."},
      {"moe.router.", "mlp.router."},
      {"moe.shared_experts.fc1.", "mlp.shared_experts.linear_fc1."},
      {"moe.shared_experts.fc2.", "mlp.shared_experts.linear_fc2."},
  };
  for (const auto& [from, to] : map)
    if (rest.rfind(from, 0) == 0) return "decoder." + layer + "." + to + rest.substr(from.size());
  // moe.experts.<e>.fc1.weight -> mlp.experts.local_experts.<e>.linear_fc1.weight (SequentialMLP)
  if (rest.rfind("moe.experts.", 0) == 0) {
    const auto e_end = rest.find('.', 12);
    if (e_end == std::string::npos) return {};
    const std::string tail = rest.substr(e_end + 1);
    const std::string fc = tail.rfind("fc1.", 0) == 0 ? "linear_fc1." : tail.rfind("fc2.", 0) == 0 ? "linear_fc2." : "";
    if (fc.empty()) return {};
    return "decoder." + layer + ".mlp.experts.local_experts." + rest.substr(12, e_end - 12) + "." + fc + tail.substr(4);
  }
  return {};
}

fs::path dump_dir_of(const fs::path& root, const std::string& case_id, const std::string& backend,
                     const std::string& run, int world_rank) {
  return root / safe_file_stem(case_id) / safe_file_stem(backend) / ("rank" + std::to_string(world_rank)) /
         safe_file_stem(run);
}

}  // namespace rcts::harness
