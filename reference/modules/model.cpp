#include "reference/modules/model.hpp"

#include <optional>

#include "reference/core/faults.hpp"
#include "reference/modules/compute.hpp"
#include "reference/modules/tensor_parallel.hpp"
#include "reference/rng/seeds.hpp"

namespace rcts {

void seed_runtime(Runtime& rt, int tp_rank, int ep_rank, int etp_rank) {
  SeedFaults faults;
  faults.tp_without_rank = fault_on(Fault::tp_seed_without_rank);
  faults.ep_without_rank = fault_on(Fault::ep_seed_without_rank);
  model_parallel_seed(rt.rng, rt.config.run.seed, tp_rank, ep_rank, etp_rank, faults);
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

MicroBatchResult GptModel::forward_backward(int step, int mb) {
  MicroBatchResult r;
  r.step = step;
  r.micro_batch = mb;
  rt_.micro_batch = mb;
  std::optional<ForkRng> replay;
  if (fault_on(Fault::rng_replayed_per_micro_batch)) replay.emplace(rt_.rng);
  const bool training = rt_.training();
  rt_.memory.reset_peaks();
  const auto peak_base = saved_bytes_now(rt_.memory);

  const bool sp = rt_.config.parallel.sequence_parallel;
  Tensor x_full = make_input(step, mb);
  Tensor x = sp ? sp_shard(rt_, x_full, x_full.name() + ".shard") : x_full;
  Tensor target = rt_.activation(x_full.shape(), data_key("target", step, mb));
  fill_uniform(target, rt_.config.run.seed ^ 0x5eedull, target.name(), 1.0);

  SaveContext root("", &rt_.save_log, training);
  Tensor y;
  if (sp && !fault_on(Fault::sp_dropout_outside_fork)) {
    // Under sequence parallelism ranks hold different sequence shards, so the whole
    // block forward runs inside a model-parallel-rng fork (DESIGN §5).
    auto fork = rt_.rng.tracker().fork(kModelParallelRng);
    y = block_.forward(root, x);
  } else {
    y = block_.forward(root, x);
  }
  r.saved_bytes_per_layer = block_.saved_bytes_per_layer();
  r.saved_after_forward = saved_bytes_now(rt_.memory);
  r.host_resident_after_forward = rt_.offload ? rt_.offload->resident_bytes() : 0;
  // The loss sees the whole sequence on every rank.
  const Tensor y_full = sp ? sp_gather(rt_, y, "output.gathered") : y;
  r.output = y_full;
  const int64_t n = y_full.numel();
  Tensor dy;
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> yv(rt_.workspace, y_full), tv(rt_.workspace, target);
    T acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T e = yv[static_cast<size_t>(i)] - tv[static_cast<size_t>(i)];
      acc += e * e;
    }
    r.loss = static_cast<double>(acc * static_cast<T>(0.5) / static_cast<T>(n));
    if (!training) return;
    dy = rt_.activation(y_full.shape(), "loss.output.grad");
    ComputeOut<T> dyv(rt_.workspace, dy);
    for (int64_t i = 0; i < n; ++i)
      dyv[static_cast<size_t>(i)] = (yv[static_cast<size_t>(i)] - tv[static_cast<size_t>(i)]) / static_cast<T>(n);
    dyv.commit();
  });
  // The loss's scratch is back in the pool before the backward starts.
  if (training) r.input_grad = block_.backward(root, sp ? sp_shard(rt_, dy, "loss.output.grad.shard") : dy);
  root.clear();
  if (rt_.offload) rt_.offload->end_iteration();
  r.peak_saved_bytes = rt_.memory.category(Domain::device, Category::saved_activation).peak +
                       rt_.memory.category(Domain::device, Category::checkpoint_input).peak - peak_base;
  r.rng_after = rt_.rng.all_states();
  return r;
}

void GptModel::finish_step() {
  // Layernorm gradients under sequence parallelism are partial sums over this rank's
  // shard: all-reduce them over TP (rank order) once per step, as Megatron-LM does.
  if (!rt_.training() || !rt_.config.parallel.sequence_parallel) return;
  for (auto* p : parameters()) {
    if (!p->sequence_parallel) continue;
    with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
      rt_.tp_group->all_reduce_sum(p->grad.data<T>(), p->grad.numel());
    });
  }
}

void GptModel::sgd_step() {
  if (!rt_.training()) return;
  for (auto* p : parameters()) {
    with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
      T* w = p->value.data<T>();
      const T* g = p->grad.data<T>();
      for (int64_t i = 0; i < p->value.numel(); ++i) w[i] -= g[i] * static_cast<T>(0.015625);
    });
  }
}

RunResult GptModel::run() {
  RunResult result;
  auto params = parameters();
  const auto& run = rt_.config.run;
  for (int step = 0; step < run.steps; ++step) {
    zero_grads(params);
    for (int mb = 0; mb < run.micro_batches; ++mb) result.micro_batches.push_back(forward_backward(step, mb));
    finish_step();
    if (step + 1 < run.steps) sgd_step();
  }
  result.params = params;
  return result;
}

}  // namespace rcts
