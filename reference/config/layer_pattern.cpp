// Which layers of a hybrid model are gated delta net layers (design §15), as
// Megatron-LM's get_linear_attention_pattern reads linear_attention_freq: an integer N
// gives one self-attention layer every N layers ([1,1,1,0,1,1,1,0,...] for N = 4),
// a list names each layer (1 GDN, 0 self-attention).
#include "reference/config/config.hpp"

namespace rcts {

bool Config::gdn_layer(int i) const {
  const auto& m = model;
  if (!m.gated_delta_net) return false;
  if (!m.linear_attention_pattern.empty())
    return i >= 0 && i < static_cast<int>(m.linear_attention_pattern.size()) && m.linear_attention_pattern[i] == 1;
  if (m.linear_attention_freq > 0) return (i + 1) % m.linear_attention_freq != 0;
  return false;
}

}  // namespace rcts
