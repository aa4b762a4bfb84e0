// The 1F1B pipeline schedule of one training step (design §16), as Megatron-LM's
// forward_backward_pipelining_without_interleaving runs it. Stage s of pp stages with
// M micro-batches runs W = min(pp - s - 1, M) warm-up forwards, then M - W steady
// rounds of one forward and one backward, then W cool-down backwards; in eval it runs
// the M forwards only. Stage 0 makes the inputs, the last stage computes the loss;
// block outputs go forward and input gradients backward to the neighbour stages
// point to point, as blocking sends and receives in Megatron's pairing (a steady
// forward's output send is one exchange with the gradient receive, and so on), so the
// stages cannot deadlock. Backwards run in micro-batch order, so stage s holds at most
// min(pp - s, M) micro-batches' saved activations at once.
//
// Called by execute() only when pp > 1; the pp = 1 path never reaches it.
#pragma once
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "reference/core/memory_timeline.hpp"
#include "reference/driver/model.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts {

// The micro-batch warm-up forwards of stage `stage` (Megatron's num_warmup_microbatches).
int pipeline_warmup(int pp, int stage, int micro_batches);

// A finished micro-batch (its backward, or its forward in eval, done) and the index
// ranges of the save log its forward and backward (recomputes) wrote.
using SaveLogRanges = std::vector<std::pair<size_t, size_t>>;
using MicroBatchDone = std::function<void(MicroBatch&, const SaveLogRanges&)>;

// One step of `model` (this rank's stage) under the 1F1B schedule; `done` is called
// for every micro-batch in micro-batch order.
void pipeline_step(GptModel& model, Runtime& rt, const ProcessGroups& groups, int step, MemoryTimeline& timeline,
                   const MicroBatchDone& done);

}  // namespace rcts
