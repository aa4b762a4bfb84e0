// seed_plan / model_parallel_seed; see seeds.hpp.
#include "reference/rng/seeds.hpp"

#include "reference/core/error.hpp"

namespace rcts {

namespace {

std::string ranks_str(int tp, int ep, int etp) {
  return "tp_rank " + std::to_string(tp) + ", ep_rank " + std::to_string(ep) + ", etp_rank " + std::to_string(etp);
}

uint64_t checked_add(uint64_t a, uint64_t b, const char* stream, uint64_t seed) {
  RCTS_CHECK(b <= UINT64_MAX - a, std::string("seed_plan: ") + stream + " seed overflows 64 bits (seed " +
                                      std::to_string(seed) + " + " + std::to_string(b) + ")");
  return a + b;
}

}  // namespace

std::string SeedPlan::to_string() const {
  return "device=" + std::to_string(device) + " data-parallel=" + std::to_string(data_parallel) +
         " model-parallel=" + std::to_string(model_parallel) + " expert-parallel=" + std::to_string(expert_parallel);
}

uint64_t pipeline_stage_seed(uint64_t seed, int pp_rank) {
  RCTS_CHECK(pp_rank >= 0, "pipeline_stage_seed: pp_rank must be >= 0, got " + std::to_string(pp_rank));
  return checked_add(seed, kPipelineRankStride * static_cast<uint64_t>(pp_rank), "pipeline stage", seed);
}

SeedPlan seed_plan(uint64_t seed, int tp_rank, int ep_rank, int etp_rank, const SeedFaults& faults) {
  RCTS_CHECK(tp_rank >= 0 && ep_rank >= 0 && etp_rank >= 0,
             "seed_plan: ranks must be >= 0, got " + ranks_str(tp_rank, ep_rank, etp_rank));
  const uint64_t tp = faults.tp_without_rank ? 0 : static_cast<uint64_t>(tp_rank);
  const uint64_t ep = faults.ep_without_rank
                          ? 0
                          : kExpertParallelRankStride * static_cast<uint64_t>(ep_rank) + static_cast<uint64_t>(etp_rank);
  SeedPlan p;
  p.device = seed;
  p.data_parallel = seed;
  p.model_parallel = checked_add(seed, kModelParallelSeedOffset + tp, kModelParallelRng, seed);
  p.expert_parallel = checked_add(seed, kExpertParallelSeedOffset + ep, kExpertParallelRng, seed);
  return p;
}

void model_parallel_seed(Rng& rng, uint64_t seed, int tp_rank, int ep_rank, int etp_rank, const SeedFaults& faults) {
  const SeedPlan p = seed_plan(seed, tp_rank, ep_rank, etp_rank, faults);
  const std::string where = "model_parallel_seed(seed " + std::to_string(seed) + ", " +
                            ranks_str(tp_rank, ep_rank, etp_rank) + "): ";
  // data-parallel = seed is below both other streams (offsets > 0), so only
  // model-parallel vs expert-parallel can collide: 1694 + tp == 100 * ep + etp.
  RCTS_CHECK(p.model_parallel != p.expert_parallel,
             where + kModelParallelRng + " seed (seed + 2718 + tp_rank = " + std::to_string(p.model_parallel) +
                 ") collides with " + kExpertParallelRng + " seed (seed + 1024 + 100*ep_rank + etp_rank = " +
                 std::to_string(p.expert_parallel) + "); choose other ranks or seeds");
  RCTS_CHECK(rng.tracker().active_forks().empty(),
             where + "called inside an active fork of '" + rng.tracker().active_forks().back() + "'");
  // All checks done; the adds below cannot collide.
  rng.host().manual_seed(p.device);
  rng.device().manual_seed(p.device);
  rng.tracker().reset();
  rng.tracker().add(kDataParallelRng, p.data_parallel);
  rng.tracker().add(kModelParallelRng, p.model_parallel);
  rng.tracker().add(kExpertParallelRng, p.expert_parallel);
}

}  // namespace rcts
