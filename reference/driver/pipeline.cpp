#include "reference/driver/pipeline.hpp"

#include <algorithm>
#include <deque>
#include <memory>

#include "reference/core/error.hpp"
#include "reference/core/faults.hpp"

namespace rcts {

int pipeline_warmup(int pp, int stage, int micro_batches) { return std::min(pp - stage - 1, micro_batches); }

namespace {

// Mutant pp_neighbour_tp_mirrored: the neighbour's TP coordinate mirrored (the pairing
// stays symmetric, so nothing hangs). TP is the fastest rank axis (design §8).
int neighbour(const ProcessGroups& g, int rank) {
  if (rank < 0 || !fault_on(Fault::pp_neighbour_tp_mirrored)) return rank;
  const int tp = g.layout().tp, t = g.coords().tp;
  return rank - t + (tp - 1 - t);
}

// This rank's place in the pipeline and the point-to-point traffic with its neighbours.
class Stage {
 public:
  Stage(Runtime& rt, const ProcessGroups& g, int step)
      : rt_(rt),
        world_(g.world()),
        prev_(neighbour(g, pipeline_prev(g.layout(), g.world_rank()))),
        next_(neighbour(g, pipeline_next(g.layout(), g.world_rank()))),
        step_(step) {}
  bool first() const { return prev_ < 0; }
  bool last() const { return next_ < 0; }

  // A block input or output of micro-batch mb, (tokens, h): the full sequence, or under
  // sequence parallelism this rank's shard of it, as Megatron-LM's p2p tensor_shape.
  Tensor buffer(const char* what, int mb) const {
    const auto& m = rt_.config.model;
    int64_t tokens = static_cast<int64_t>(m.seq_length) * m.micro_batch_size;
    if (rt_.config.parallel.sequence_parallel) tokens /= rt_.tp_group->size();
    return rt_.activation({tokens, m.hidden_size},
                          std::string("pipeline.") + what + ".step" + std::to_string(step_) + ".mb" +
                              std::to_string(mb));
  }

  // Megatron-LM's p2p_communication operations; a missing neighbour makes them no-ops.
  Tensor recv_forward(int mb) {
    if (first()) return {};
    Tensor x = buffer("input", mb);
    world_.recv(x.bytes(), x.nbytes(), prev_);
    return x;
  }
  void send_forward(const Tensor& y) {
    if (!last()) world_.send(y.bytes(), y.nbytes(), next_);
  }
  Tensor recv_backward(int mb) {
    if (last()) return {};
    Tensor dy = buffer("output.grad", mb);
    world_.recv(dy.bytes(), dy.nbytes(), next_);
    return dy;
  }
  void send_backward(const Tensor& dx) {
    if (!first()) world_.send(dx.bytes(), dx.nbytes(), prev_);
  }
  Tensor send_forward_recv_backward(const Tensor& y, int mb) {
    if (last()) return {};
    Tensor dy = buffer("output.grad", mb);
    world_.send_recv(y.bytes(), y.nbytes(), next_, dy.bytes(), dy.nbytes(), next_);
    return dy;
  }
  Tensor send_backward_recv_forward(const Tensor& dx, int mb) {
    if (first()) return {};
    Tensor x = buffer("input", mb);
    world_.send_recv(dx.bytes(), dx.nbytes(), prev_, x.bytes(), x.nbytes(), prev_);
    return x;
  }

 private:
  Runtime& rt_;
  Communicator& world_;
  int prev_, next_, step_;
};

struct InFlight {
  std::unique_ptr<MicroBatch> m;
  SaveLogRanges saves;
};

}  // namespace

void pipeline_step(GptModel& model, Runtime& rt, const ProcessGroups& groups, int step, MemoryTimeline& timeline,
                   const MicroBatchDone& done) {
  Stage stage(rt, groups, step);
  const int pp = groups.layout().pp;
  const int M = rt.config.run.micro_batches;
  const bool training = rt.training();
  const int warmup = training ? pipeline_warmup(pp, groups.coords().pp, M) : M;
  const int remaining = M - warmup;
  const auto label = [&](int mb) { return "step " + std::to_string(step) + " mb " + std::to_string(mb); };
  const auto log_size = [&] { return rt.save_log.records().size(); };
  std::deque<InFlight> in_flight;  // forwards done, backwards pending, oldest first
  int forwarded = 0, backwarded = 0;

  // Forward of the next micro-batch on input x (undefined on the first stage, which
  // makes its own); returns what the next stage receives.
  const auto forward = [&](Tensor x) -> Tensor {
    const int mb = forwarded++;
    InFlight f{std::make_unique<MicroBatch>(model.start(step, mb)), {}};
    MicroBatch& m = *f.m;
    m.first_stage = stage.first();
    m.last_stage = stage.last();
    if (!stage.first()) m.input = x;
    timeline.mark(label(mb) + " forward");
    const size_t before = log_size();
    model.forward(m);
    if (stage.last()) {
      model.loss(m);
    } else {
      m.result.output = m.block_output;
    }
    f.saves.emplace_back(before, log_size());
    in_flight.push_back(std::move(f));
    return m.block_output;
  };
  const auto finish = [&](InFlight& f) {
    done(*f.m, f.saves);
    const std::string end = label(f.m->result.micro_batch) + " end";
    f.m.reset();
    timeline.mark(end);
  };
  // Backward of the oldest micro-batch in flight with the gradient of its output
  // (undefined on the last stage: the loss gradient); returns its input gradient.
  const auto backward = [&](Tensor dy) -> Tensor {
    RCTS_CHECK(!in_flight.empty(), "pipeline: a backward with no micro-batch in flight");
    InFlight f = std::move(in_flight.front());
    in_flight.pop_front();
    MicroBatch& m = *f.m;
    RCTS_CHECK(m.result.micro_batch == backwarded, "pipeline: backward of micro-batch " +
                                                       std::to_string(m.result.micro_batch) + ", expected " +
                                                       std::to_string(backwarded));
    ++backwarded;
    rt.micro_batch = m.result.micro_batch;  // recompute draws are logged for their micro-batch
    rt.step = step;
    if (!stage.last()) m.loss_grad = dy;
    timeline.mark(label(m.result.micro_batch) + " backward");
    const size_t before = log_size();
    model.backward(m);
    f.saves.emplace_back(before, log_size());
    Tensor dx = m.result.input_grad;
    finish(f);
    return dx;
  };

  if (!training) {
    for (int i = 0; i < M; ++i) {
      stage.send_forward(forward(stage.recv_forward(forwarded)));
      InFlight f = std::move(in_flight.front());
      in_flight.pop_front();
      model.backward(*f.m);  // ends the micro-batch; nothing to differentiate in eval
      finish(f);
    }
    return;
  }
  for (int i = 0; i < warmup; ++i) stage.send_forward(forward(stage.recv_forward(forwarded)));
  Tensor x = remaining > 0 ? stage.recv_forward(forwarded) : Tensor{};
  for (int i = 0; i < remaining; ++i) {
    const Tensor y = forward(x);
    const Tensor dy = stage.send_forward_recv_backward(y, backwarded);
    const Tensor dx = backward(dy);
    if (i + 1 == remaining)
      stage.send_backward(dx);
    else
      x = stage.send_backward_recv_forward(dx, forwarded);
  }
  for (int i = 0; i < warmup; ++i) stage.send_backward(backward(stage.recv_backward(backwarded)));
  RCTS_CHECK(in_flight.empty() && backwarded == M, "pipeline: " + std::to_string(M - backwarded) +
                                                       " micro-batches left without a backward");
}

}  // namespace rcts
