// The suite's own Philox and dropout-mask rule, independent of kernels/ and
// reference/rng: Philox4x32-10 written from Salmon et al. (SC'11) / Random123, the
// dropout stream rule of docs/decisions.md evaluated exactly, and FNV-1a. Pure
// functions of their arguments, on the lowest layer that both users sit above: the
// masks check (harness/checks/mask_oracle.hpp) regenerates every logged mask with it
// and the float64 oracle (oracle/f64_block.hpp) draws its masks with it, so a bug
// shared by the reference's Philox, threshold or digest cannot hide.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rcts::oracle::philox_masks {

using Words = std::array<uint32_t, 4>;

// Philox4x32-10 of one counter under one key (Random123's philox4x32_R(10, ...)).
Words philox4x32_10(Words counter, std::array<uint32_t, 2> key);
// The rcts stream layout: key = seed (low word first), counter = (index lo, index hi, 0, 0).
Words stream_block(uint64_t seed, uint64_t index);

// floor(p * 2^24 + 1/2), computed exactly (integer arithmetic on p's bits). p outside
// [0, 1] (or NaN): rcts::Error naming the value.
uint32_t keep_threshold(double p);
// Blocks a draw over n elements consumes: ceil(n / 4).
uint64_t blocks_for(int64_t n);
// The mask (1 keep, 0 drop) of a draw over n elements at (seed, offset) with rate p.
std::vector<uint8_t> dropout_mask(uint64_t seed, uint64_t offset, double p, int64_t n);

// FNV-1a 64 (the MaskRecord digest).
uint64_t fnv1a64(const uint8_t* data, size_t n);

}  // namespace rcts::oracle::philox_masks
