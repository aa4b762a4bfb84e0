// A counter-based generator (design §2, §5): its whole state is (seed, offset), where
// the offset counts 128-bit Philox4x32-10 blocks already handed out. A consumer calls
// reserve(k), gets the first block index of its range and draws blocks
// philox::block(seed, first) .. philox::block(seed, first + k - 1) itself. Nothing
// else is hidden in the generator, so saving and restoring a state is a value copy and
// the same state gives the same bits on every backend and thread count.
#pragma once
#include <cstdint>
#include <string>

namespace rcts {

struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;  // in 128-bit Philox blocks
  bool operator==(const GeneratorState&) const = default;
  std::string to_string() const;  // "seed=1234 offset=17"
};

class Generator {
 public:
  Generator() = default;
  explicit Generator(uint64_t seed) { manual_seed(seed); }

  // Like torch's manual_seed: new seed, offset back to 0.
  void manual_seed(uint64_t seed) { state_ = {seed, 0}; }

  GeneratorState state() const { return state_; }
  void set_state(const GeneratorState& s) { state_ = s; }
  uint64_t seed() const { return state_.seed; }
  uint64_t offset() const { return state_.offset; }

  // Hands out `blocks` consecutive Philox blocks: returns the current offset (the
  // first block of the range) and advances the offset by `blocks`. Throws if the
  // offset would wrap around 2^64 (the stream would repeat).
  uint64_t reserve(uint64_t blocks);

  // The range a dropout over n elements takes: dropout_rule::blocks_for(n) blocks.
  // n must be >= 0.
  uint64_t reserve_elements(int64_t n);

  std::string to_string() const { return state_.to_string(); }

 private:
  GeneratorState state_;
};

}  // namespace rcts
