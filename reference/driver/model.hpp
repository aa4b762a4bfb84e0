// The model a case runs: inputs -> TransformerBlock -> scalar loss, over
// `steps` x `micro_batches` (docs/design.md §4, §7). Inputs and loss targets come
// from counter streams keyed by (seed, step, micro-batch), so every variant of a case
// sees the same data. The loss is 0.5 * mean((y - target)^2) in the compute type,
// summed in index order. Gradients accumulate over the micro-batches of a step;
// between steps a fixed SGD update (w -= 2^-6 * g, exact in any order) changes the
// weights so later steps are not copies of the first.
//
// One micro-batch is three separate steps on its own MicroBatch state — forward,
// loss, backward — each micro-batch with its own save-context root, so a schedule
// may hold several micro-batches between their forward and their backward.
#pragma once
#include <memory>
#include <vector>

#include "reference/modules/transformer_block.hpp"

namespace rcts {

struct MicroBatchResult {
  int step = 0;
  int micro_batch = 0;
  double loss = 0;
  Tensor output;      // block output (activation dtype)
  Tensor input_grad;  // d loss / d input
  RngStates rng_after;
  std::vector<int64_t> saved_bytes_per_layer;
  int64_t peak_saved_bytes = 0;  // peak of saved_activation + checkpoint_input (their sum) during the micro-batch
  // At the end of forward: bytes held for backward on the device, and offloaded
  // bytes resident on the host (their sum is what a run without offload holds).
  int64_t saved_after_forward = 0;
  int64_t host_resident_after_forward = 0;
};

// A micro-batch between its steps: its data, what its forward saved, its loss gradient.
struct MicroBatch {
  MicroBatch(int step, int micro_batch, SaveLog* log, bool training);
  SaveContext root;      // everything the block's forward saved for this micro-batch
  Tensor input;          // (tokens, h) full sequence; a later pipeline stage: what it received
  Tensor target;         // (tokens, h)
  Tensor block_output;   // this rank's shard under sequence parallelism
  Tensor loss_grad;      // d loss / d output (full sequence); a pipeline stage before the last: of its output
  // Under pp > 1 (design §16): whether this stage makes the data (the first) or computes
  // the loss (the last). Under sequence parallelism only those scatter and gather the
  // sequence; the stages between receive and send the shard.
  bool first_stage = true;
  bool last_stage = true;
  int64_t peak_base = 0; // saved bytes held when the micro-batch started
  MicroBatchResult result;
  // Mutant rng_replayed_per_micro_batch: all RNG states restored when the micro-batch ends.
  std::unique_ptr<ForkRng> replay;
};

class GptModel {
 public:
  explicit GptModel(Runtime& rt);

  // The three steps of a micro-batch.
  MicroBatch start(int step, int mb);
  void forward(MicroBatch& m);
  void loss(MicroBatch& m);
  void backward(MicroBatch& m);  // ends the micro-batch (in eval there is nothing to differentiate)
  // start, forward, loss and (in training) backward.
  MicroBatchResult run_micro_batch(int step, int mb);

  // After a step's micro-batches: reduce sequence-parallel gradients over TP.
  void finish_step();
  // Between steps: w -= 2^-6 * grad (a power-of-two rate: the product is exact).
  void sgd_step();
  std::vector<Parameter*> parameters();
  TransformerBlock& block() { return block_; }
  Tensor make_input(int step, int mb);

 private:
  Runtime& rt_;
  TransformerBlock block_;
};

// Seeds the runtime's RNG as Megatron's model_parallel_cuda_manual_seed does,
// honouring the seed mutants. Ranks are (tp, ep, etp); a pipeline stage first offsets
// the seed by 100 · pp_rank as Megatron-LM's training setup does (design §16).
void seed_runtime(Runtime& rt, int tp_rank = 0, int ep_rank = 0, int etp_rank = 0, int pp_rank = 0);

}  // namespace rcts
