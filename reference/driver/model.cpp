#include "reference/driver/model.hpp"

#include "reference/core/faults.hpp"
#include "reference/modules/tensor_parallel.hpp"
#include "reference/rng/seeds.hpp"
#include "reference/runtime/compute.hpp"

namespace rcts {

void seed_runtime(Runtime& rt, int tp_rank, int ep_rank, int etp_rank, int pp_rank) {
  SeedFaults faults;
  faults.tp_without_rank = fault_on(Fault::tp_seed_without_rank);
  faults.ep_without_rank = fault_on(Fault::ep_seed_without_rank);
  model_parallel_seed(rt.rng, pipeline_stage_seed(rt.config.run.seed, pp_rank), tp_rank, ep_rank, etp_rank, faults);
}

MicroBatch::MicroBatch(int step, int micro_batch, SaveLog* log, bool training) : root("", log, training) {
  result.step = step;
  result.micro_batch = micro_batch;
}

GptModel::GptModel(Runtime& rt) : rt_(rt), block_(rt) {}

std::vector<Parameter*> GptModel::parameters() {
  std::vector<Parameter*> p;
  block_.parameters(p);
  return p;
}

namespace {
std::string data_key(const char* what, int step, int mb) {
  return std::string(what) + ".step" + std::to_string(step) + ".mb" + std::to_string(mb);
}
}  // namespace

Tensor GptModel::make_input(int step, int mb) {
  const auto& m = rt_.config.model;
  Tensor x = rt_.activation({static_cast<int64_t>(m.seq_length) * m.micro_batch_size, m.hidden_size},
                            data_key("input", step, mb));
  fill_uniform(x, rt_.config.run.seed, x.name(), 1.0);
  return x;
}

MicroBatch GptModel::start(int step, int mb) {
  MicroBatch m(step, mb, &rt_.save_log, rt_.training());
  if (fault_on(Fault::rng_replayed_per_micro_batch)) m.replay = std::make_unique<ForkRng>(rt_.rng);
  rt_.micro_batch = mb;
  rt_.step = step;
  rt_.memory.reset_peaks();
  m.peak_base = saved_bytes_now(rt_.memory);
  m.input = make_input(step, mb);
  m.target = rt_.activation(m.input.shape(), data_key("target", step, mb));
  fill_uniform(m.target, rt_.config.run.seed ^ 0x5eedull, m.target.name(), 1.0);
  return m;
}

void GptModel::forward(MicroBatch& m) {
  const bool sp = rt_.config.parallel.sequence_parallel;
  // Megatron-LM's embedding scatters the sequence on the first stage only; a later stage
  // receives the shard (its p2p tensor_shape is seq / tp, design §16).
  const Tensor x = sp && m.first_stage ? sp_shard(rt_, m.input, m.input.name() + ".shard") : m.input;
  if (sp && !fault_on(Fault::sp_dropout_outside_fork)) {
    // Under sequence parallelism ranks hold different sequence shards, so the whole
    // block forward runs inside a model-parallel-rng fork (design §5).
    auto fork = rt_.rng.tracker().fork(kModelParallelRng);
    m.block_output = block_.forward(m.root, x);
  } else {
    m.block_output = block_.forward(m.root, x);
  }
  m.result.saved_bytes_per_layer = block_.saved_bytes_per_layer();
  m.result.saved_after_forward = saved_bytes_now(rt_.memory);
  m.result.host_resident_after_forward = rt_.offload ? rt_.offload->resident_bytes() : 0;
}

void GptModel::loss(MicroBatch& m) {
  // The loss sees the whole sequence on every rank.
  const bool sp = rt_.config.parallel.sequence_parallel;
  const Tensor y = sp ? sp_gather(rt_, m.block_output, "output.gathered") : m.block_output;
  m.result.output = y;
  const int64_t n = y.numel();
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> yv(rt_, y), tv(rt_, m.target);
    m.result.loss = static_cast<double>(ops.mse_loss(yv.data(), tv.data(), n));
    if (!rt_.training()) return;
    m.loss_grad = rt_.activation(y.shape(), "loss.output.grad");
    ComputeOut<T> dyv(rt_, m.loss_grad);
    ops.mse_loss_backward(dyv.data(), yv.data(), tv.data(), n);
    dyv.commit();
  });
}

void GptModel::backward(MicroBatch& m) {
  // The loss's scratch is back in the pool before the backward starts.
  // The loss gradient is the full sequence; a stage before the last receives its shard's.
  const bool shard = rt_.config.parallel.sequence_parallel && m.last_stage;
  if (rt_.training())
    m.result.input_grad =
        block_.backward(m.root, shard ? sp_shard(rt_, m.loss_grad, "loss.output.grad.shard") : m.loss_grad);
  m.root.clear();
  if (rt_.offload) rt_.offload->end_iteration();
  m.result.peak_saved_bytes = rt_.memory.categories(Domain::device, kHeldForBackward).peak - m.peak_base;
  m.result.rng_after = rt_.rng.all_states();
}

MicroBatchResult GptModel::run_micro_batch(int step, int mb) {
  MicroBatch m = start(step, mb);
  forward(m);
  loss(m);
  backward(m);
  return std::move(m.result);
}

void GptModel::finish_step() {
  // Layernorm gradients under sequence parallelism are partial sums over this rank's
  // shard: all-reduce them over TP (rank order) once per step, as Megatron-LM does.
  if (!rt_.training() || !rt_.config.parallel.sequence_parallel) return;
  for (auto* p : parameters()) {
    if (!p->sequence_parallel) continue;
    if (fault_on(Fault::sp_grad_not_reduced) && p->name.ends_with("_layernorm.bias")) continue;
    with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
      rt_.all_reduce_sum(*rt_.tp_group, p->grad.data<T>(), p->grad.numel());
    });
  }
}

void GptModel::sgd_step() {
  if (!rt_.training()) return;
  const double lr = fault_on(Fault::sgd_lr_doubled) ? 0.03125 : 0.015625;
  for (auto* p : parameters()) {
    with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
      rt_.ops<T>().sgd_step(p->value.data<T>(), p->grad.data<T>(), p->value.numel(), static_cast<T>(lr));
    });
  }
}

}  // namespace rcts
