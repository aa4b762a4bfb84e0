// The harness's own dropout-mask oracle, independent of kernels/ and reference/rng:
// Philox4x32-10 written from Salmon et al. (SC'11) / Random123, the dropout stream
// rule of docs/decisions.md evaluated exactly, FNV-1a, and the stream rule a run's
// mask log must obey. The masks check (checks.cpp) regenerates every mask with it,
// so a bug shared by the reference's Philox, threshold or digest cannot hide.
//
// Stream rule (check_mask_streams), per run:
//  - every stream (a Philox key = seed) starts at block 0 when the run seeds its RNG;
//  - its forward draws, in log order, cover consecutive block ranges: a draw over n
//    elements at block o is followed by the stream's next draw at o + ceil(n / 4),
//    across layers, micro-batches and steps (no block reused, none skipped);
//  - two stream names never share a seed (their blocks would overlap);
//  - a recompute draw repeats exactly (seed, offset, n, p, digest) the latest forward
//    draw of the same site in its step and micro-batch (a pipeline stage holds several
//    micro-batches at once, design §16), and consumes nothing;
//  - after the last micro-batch each generator (device default, every tracker
//    stream) stands where its last draw ended (block 0 if it never drew).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rcts {
struct RunRecord;  // reference/modules/execute.hpp
}

namespace rcts::harness::mask_oracle {

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

// The stream rule above; nullopt when it holds, else what broke, naming the site,
// micro-batch, stream, seed and block offsets.
std::optional<std::string> check_mask_streams(const RunRecord& run);

}  // namespace rcts::harness::mask_oracle
