// The stream rule a run's mask log must obey (the masks check, checks.cpp). The masks
// themselves are regenerated with the suite's own Philox (oracle/philox_masks.hpp).
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
#include <optional>
#include <string>

namespace rcts {
struct RunRecord;  // reference/driver/execute.hpp
}

namespace rcts::harness::mask_oracle {

// The stream rule above; nullopt when it holds, else what broke, naming the site,
// micro-batch, stream, seed and block offsets.
std::optional<std::string> check_mask_streams(const RunRecord& run);

}  // namespace rcts::harness::mask_oracle
