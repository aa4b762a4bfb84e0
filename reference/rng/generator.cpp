// Generator: (seed, offset) bookkeeping; see generator.hpp.
#include "reference/rng/generator.hpp"

#include "kernels/common/dropout_rule.hpp"
#include "reference/core/error.hpp"

namespace rcts {

std::string GeneratorState::to_string() const {
  return "seed=" + std::to_string(seed) + " offset=" + std::to_string(offset);
}

uint64_t Generator::reserve(uint64_t blocks) {
  const uint64_t first = state_.offset;
  // Unsigned wrap would silently reuse counters, i.e. repeat masks.
  RCTS_CHECK(blocks <= UINT64_MAX - first,
             "Generator::reserve: " + std::to_string(blocks) + " blocks overflow the offset of generator " +
                 to_string());
  state_.offset = first + blocks;
  return first;
}

uint64_t Generator::reserve_elements(int64_t n) {
  RCTS_CHECK(n >= 0, "Generator::reserve_elements: negative element count " + std::to_string(n) +
                         " for generator " + to_string());
  return reserve(dropout_rule::blocks_for(n));
}

}  // namespace rcts
