// Per-rank seeding (design §5, Megatron's model_parallel_cuda_manual_seed):
//   host default, device default, data-parallel-rng = seed
//   model-parallel-rng  = seed + 2718 + tp_rank
//   expert-parallel-rng = seed + 1024 + 100 * ep_rank + etp_rank
// The two offsets collide when 1694 + tp_rank == 100 * ep_rank + etp_rank (e.g. tp 6,
// ep 17, etp 0); rcts reports that as an Error naming both streams and the ranks and
// leaves the Rng untouched. SeedFaults are deliberate bugs for the suite's mutants.
#pragma once
#include <cstdint>
#include <string>

#include "reference/rng/rng.hpp"

namespace rcts {

inline constexpr uint64_t kModelParallelSeedOffset = 2718;
inline constexpr uint64_t kExpertParallelSeedOffset = 1024;
inline constexpr uint64_t kExpertParallelRankStride = 100;
// Megatron-LM's training setup seeds each pipeline stage with seed + 100 · pp_rank
// before model_parallel_cuda_manual_seed (design §16), so stages draw different masks.
inline constexpr uint64_t kPipelineRankStride = 100;

struct SeedFaults {
  bool tp_without_rank = false;  // model-parallel-rng = seed + 2718 (every TP rank alike)
  bool ep_without_rank = false;  // expert-parallel-rng = seed + 1024 (every EP/ETP rank alike)
  bool operator==(const SeedFaults&) const = default;
};

// The seeds one rank gets. The host default generator gets `device` as well.
struct SeedPlan {
  uint64_t device = 0;
  uint64_t data_parallel = 0;
  uint64_t model_parallel = 0;
  uint64_t expert_parallel = 0;
  bool operator==(const SeedPlan&) const = default;
  std::string to_string() const;
};

// Pure: the plan for these ranks. Throws on a negative rank or a seed whose sum
// overflows 64 bits; does NOT check collisions (mask checks may want the plan anyway).
SeedPlan seed_plan(uint64_t seed, int tp_rank, int ep_rank, int etp_rank, const SeedFaults& faults = {});

// The seed a pipeline stage passes to model_parallel_seed: seed + 100 · pp_rank. Throws
// on a negative rank or a sum that overflows 64 bits.
uint64_t pipeline_stage_seed(uint64_t seed, int pp_rank);

// Seeds `rng` from seed_plan(): host and device default generators are manual_seed'ed,
// the tracker is reset and gets the three named streams. Throws, changing nothing, on
// colliding tracker seeds, bad ranks, or when called inside an active tracker fork.
void model_parallel_seed(Rng& rng, uint64_t seed, int tp_rank, int ep_rank, int etp_rank,
                         const SeedFaults& faults = {});

}  // namespace rcts
