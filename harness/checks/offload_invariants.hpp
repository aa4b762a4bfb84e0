// The offload invariants of design §9 that need more than the byte totals: which
// groups a configuration forms (an oracle written from the design, independent of
// reference/offload), that warmup moves nothing, that every group moves what it may,
// and when a module may move nothing at all. check_offload (checks.hpp) runs them;
// each returns the first violation, or nothing.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reference/driver/execute.hpp"

namespace rcts::harness {


// The first micro-batch is warmup (design §9): it records groups and moves nothing, so
// after it the host pool has allocated nothing, nothing is resident on the host at the
// end of its forward, and its device bytes equal the run's without offload.
std::optional<std::string> warmup_moved_nothing(const RunRecord& without_offload, const RunRecord& run);

// Every expected group (and no other) committed once per micro-batch after warmup;
// per fine-grained name exactly the group whose backward runs first (the last
// expected layer) is the margin and moved nothing, layer-level groups have no
// margin; every other group moved exactly its eligible bytes (each distinct storage
// of the tensors it marked for offload, once per micro-batch) and reloaded them all;
// every group saw at least one saved tensor.
std::optional<std::string> groups_moved_their_bytes(const RunRecord& run);

// Whether `producer` (a storage's name) is an output an output-discarding recompute
// of `c` rebuilds (design §6): the norms' outputs under selective layernorm, the
// expert activation's (and expert dropout's) under moe_act.
bool recomputed_by_output_discarding(const Config& c, const std::string& producer);

// A module (offload name) may move no bytes at all only when everything its groups
// saved outside the margin is a parameter or recomputed by an output-discarding
// checkpoint. Every tensor kept as "recomputed" must be such an output, every one kept
// as "parameter" a parameter of the model.
std::optional<std::string> idle_modules_only_recomputed(const RunRecord& run);

}  // namespace rcts::harness
