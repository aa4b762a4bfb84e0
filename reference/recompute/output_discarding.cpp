#include "reference/recompute/output_discarding.hpp"

#include "reference/recompute/checkpoint_function.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts {

namespace {
constexpr StashKey<RngStates> kSnapshot{"output_discarding.rng"};
}

OutputDiscardingCheckpoint::OutputDiscardingCheckpoint(Rng& rng, Region& region, SaveContext& ctx)
    : rng_(rng), region_(region), ctx_(ctx) {}

std::vector<Tensor> OutputDiscardingCheckpoint::forward(const std::vector<Tensor>& in) {
  ctx_.stash(kSnapshot, rng_.all_states());
  {
    CheckpointingScope scope;
    outputs_ = region_.forward(ctx_.child_no_grad("#nograd"), in);
  }
  if (ctx_.enabled())
    for (auto& t : outputs_) t.storage()->mark_recomputed_by_checkpoint();
  const auto names = region_.input_names();
  RCTS_CHECK(names.size() == in.size(), "output-discarding checkpoint of '" + ctx_.path() + "': region names " +
                                            std::to_string(names.size()) + " inputs but got " +
                                            std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i) ctx_.save(in[i], names[i], Category::checkpoint_input);
  return outputs_;
}

void OutputDiscardingCheckpoint::discard_output_and_register_recompute(const std::string& hook_name) {
  RCTS_CHECK(ctx_.enabled(), "output-discarding checkpoint of '" + ctx_.path() +
                                 "': no gradient will arrive in a no-grad forward, so the released output "
                                 "could never be recomputed");
  hook_name_ = hook_name;
  for (auto& t : outputs_) t.storage()->release();
  discarded_ = true;
}

void OutputDiscardingCheckpoint::recompute() {
  if (recomputed_) return;
  RCTS_CHECK(discarded_, "output-discarding checkpoint of '" + ctx_.path() +
                             "': recompute requested but the output was never discarded");
  std::vector<Tensor> in;
  for (const auto& name : region_.input_names()) in.push_back(ctx_.load(name));
  recompute_ctx_ = &ctx_.child_for_recompute("#recompute");
  auto fresh = checkpoint::recompute_forward(rng_, region_, *recompute_ctx_, ctx_.stashed(kSnapshot), in);
  RCTS_CHECK(fresh.size() == outputs_.size(), "output-discarding recompute of '" + ctx_.path() +
                                                  "' produced a different number of outputs");
  for (size_t i = 0; i < fresh.size(); ++i) {
    // The recompute ctx may have saved `fresh[i]` itself; point those saves at the
    // adopted storage too by adopting into the original and keeping one storage.
    outputs_[i].storage()->adopt(*fresh[i].storage());
  }
  recomputed_ = true;
}

std::vector<Tensor> OutputDiscardingCheckpoint::backward(const std::vector<Tensor>& dout) {
  RCTS_CHECK(recomputed_, "backward of output-discarding checkpoint '" + ctx_.path() +
                              "' ran before its recompute fired (the gradient of '" + hook_name_ +
                              "' has not arrived)");
  return region_.backward(*recompute_ctx_, dout);
}

}  // namespace rcts
