// CheckpointFunction and OutputDiscardingCheckpoint on a toy region whose output
// depends on the RNG: y = x * (1 + r), r drawn from the live device generator and
// from the model-parallel-rng tracker stream. Gradients are only right when the
// recompute sees exactly the forward's RNG states.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "kernels/common/philox.hpp"
#include "reference/core/faults.hpp"
#include "reference/runtime/runtime.hpp"
#include "reference/recompute/checkpoint_function.hpp"
#include "reference/recompute/checkpoint_state.hpp"
#include "reference/recompute/output_discarding.hpp"
#include "reference/rng/seeds.hpp"

namespace rcts {
namespace {

double draw(Generator& g) {
  const auto st = g.state();
  const auto off = g.reserve(1);
  return static_cast<double>(philox::block(st.seed, off)[0] >> 8) / 16777216.0;
}

// y = x * (1 + r_device + r_tracker); saves x and the factor.
class NoisyScale final : public Region {
 public:
  explicit NoisyScale(Runtime& rt) : rt_(rt) {}
  int forwards = 0;
  bool saw_checkpointing = false;
  std::vector<std::string> input_names() const override { return {"x"}; }
  std::vector<Tensor> forward(SaveContext& ctx, const std::vector<Tensor>& in) override {
    ++forwards;
    saw_checkpointing = is_checkpointing();
    double f = 1.0 + draw(rt_.rng.device());
    {
      auto fork = rt_.rng.tracker().fork(kModelParallelRng);
      f += draw(rt_.rng.device());
    }
    Tensor fac = Tensor::empty({1}, DType::f64, rt_.place(), "factor");
    fac.data<double>()[0] = f;
    ctx.save(in[0], "x");
    ctx.save(fac, "factor");
    Tensor y = Tensor::empty(in[0].shape(), DType::f64, rt_.place(), "y");
    for (int64_t i = 0; i < y.numel(); ++i) y.data<double>()[i] = in[0].data<double>()[i] * f;
    return {y};
  }
  std::vector<Tensor> backward(SaveContext& ctx, const std::vector<Tensor>& dout) override {
    const double f = ctx.load("factor").data<double>()[0];
    Tensor dx = Tensor::empty(dout[0].shape(), DType::f64, rt_.place(), "dx");
    for (int64_t i = 0; i < dx.numel(); ++i) dx.data<double>()[i] = dout[0].data<double>()[i] * f;
    return {dx};
  }

 private:
  Runtime& rt_;
};

struct Fixture : ::testing::Test {
  Config cfg;
  std::unique_ptr<Runtime> rt;
  void SetUp() override {
    cfg.model.activation_dtype = DType::f64;
    rt = std::make_unique<Runtime>(cfg, cpu::default_backend());
    model_parallel_seed(rt->rng, 77, 0, 0, 0);
  }
  Tensor ones(int64_t n) {
    Tensor t = Tensor::empty({n}, DType::f64, rt->place(), "x");
    for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = 1.0 + static_cast<double>(i);
    return t;
  }
  // Plain forward + backward (the baseline); returns dx[0] and the RNG after.
  std::pair<double, RngStates> plain(NoisyScale& r) {
    SaveContext ctx("toy", nullptr);
    auto y = r.forward(ctx, {ones(4)});
    draw(rt->rng.device());  // something after the region draws too
    auto dx = r.backward(ctx, {ones(4)});
    return {dx[0].data<double>()[1], rt->rng.all_states()};
  }
  std::pair<double, RngStates> checkpointed(NoisyScale& r) {
    SaveContext ctx("toy", nullptr);
    auto y = checkpoint::forward(rt->rng, r, ctx, {ones(4)});
    draw(rt->rng.device());
    auto dx = checkpoint::backward(rt->rng, r, ctx, {ones(4)});
    return {dx[0].data<double>()[1], rt->rng.all_states()};
  }
};

TEST_F(Fixture, CheckpointSavesOnlyInputsAndMatchesPlainRun) {
  NoisyScale r(*rt);
  auto [want, rng_want] = plain(r);
  SetUp();
  NoisyScale r2(*rt);
  SaveLog log;
  SaveContext ctx("toy", &log);
  const auto before = rt->rng.all_states();
  checkpoint::forward(rt->rng, r2, ctx, {ones(4)});
  EXPECT_TRUE(r2.saw_checkpointing);
  EXPECT_FALSE(is_checkpointing());
  ASSERT_EQ(log.records().size(), 1u) << "only the input is saved in forward";
  EXPECT_EQ(log.records()[0].category, Category::checkpoint_input);
  EXPECT_EQ(log.records()[0].key(), "toy.x");
  (void)before;
  draw(rt->rng.device());
  auto dx = checkpoint::backward(rt->rng, r2, ctx, {ones(4)});
  EXPECT_EQ(r2.forwards, 2);
  EXPECT_EQ(dx[0].data<double>()[1], want) << "recompute must redraw the forward's randomness";
  EXPECT_EQ(rt->rng.all_states(), rng_want) << "recompute must not advance the live streams";
}

TEST_F(Fixture, NoRestoreMutantChangesGradients) {
  NoisyScale r(*rt);
  auto [want, rng_want] = plain(r);
  SetUp();
  NoisyScale r2(*rt);
  FaultScope f(Fault::no_rng_restore);
  EXPECT_NE(checkpointed(r2).first, want);
}

TEST_F(Fixture, DefaultOnlyRestoreMutantChangesTrackerDraws) {
  NoisyScale r(*rt);
  auto [want, rng_want] = plain(r);
  SetUp();
  NoisyScale r2(*rt);
  FaultScope f(Fault::default_only_restore);
  EXPECT_NE(checkpointed(r2).first, want);
}

TEST_F(Fixture, MainStreamMutantPollutesRngButKeepsGradients) {
  NoisyScale r(*rt);
  auto [want, rng_want] = plain(r);
  SetUp();
  NoisyScale r2(*rt);
  FaultScope f(Fault::recompute_on_main_stream);
  auto [got, rng_got] = checkpointed(r2);
  EXPECT_EQ(got, want);
  EXPECT_NE(rng_got, rng_want);
}

TEST_F(Fixture, CheckpointingFlagIsClearedByExceptions) {
  struct Throws final : Region {
    std::vector<std::string> input_names() const override { return {"x"}; }
    std::vector<Tensor> forward(SaveContext&, const std::vector<Tensor>&) override { throw Error("boom"); }
    std::vector<Tensor> backward(SaveContext&, const std::vector<Tensor>&) override { return {}; }
  } t;
  SaveContext ctx("t", nullptr);
  EXPECT_THROW(checkpoint::forward(rt->rng, t, ctx, {ones(2)}), Error);
  EXPECT_FALSE(is_checkpointing());
}

TEST_F(Fixture, DistributeWithOneRankIsTheIdentity) {
  NoisyScale r(*rt);
  auto [want, rng_want] = plain(r);
  SetUp();
  NoisyScale r2(*rt);
  SingleCommunicator one;
  SaveContext ctx("toy", nullptr);
  checkpoint::forward(rt->rng, r2, ctx, {ones(4)}, {true, &one});
  draw(rt->rng.device());
  auto dx = checkpoint::backward(rt->rng, r2, ctx, {ones(4)});
  EXPECT_EQ(dx[0].data<double>()[1], want);
}

// Sequence parallelism runs the block inside a model-parallel-rng fork; the region's
// own (nested) fork and its default-stream draw must see the same states when the
// recompute runs in backward, outside any fork.
TEST_F(Fixture, RecomputeInsideAnOuterForkRedrawsTheSameStreams) {
  auto run = [&](bool checkpointed) {
    SetUp();
    NoisyScale r(*rt);
    SaveContext ctx("toy", nullptr);
    {
      auto outer = rt->rng.tracker().fork(kModelParallelRng);
      draw(rt->rng.device());  // the outer stream advances before the region
      if (checkpointed) checkpoint::forward(rt->rng, r, ctx, {ones(4)});
      else r.forward(ctx, {ones(4)});
      draw(rt->rng.device());
    }
    auto dx = checkpointed ? checkpoint::backward(rt->rng, r, ctx, {ones(4)}) : r.backward(ctx, {ones(4)});
    return std::make_pair(dx[0].data<double>()[1], rt->rng.all_states());
  };
  const auto want = run(false);
  const auto got = run(true);
  EXPECT_EQ(got.first, want.first);
  EXPECT_EQ(got.second, want.second);
}

TEST_F(Fixture, OutputDiscardingRecomputesIntoTheSameStorage) {
  NoisyScale r(*rt);
  SaveContext ctx("toy", nullptr);
  OutputDiscardingCheckpoint ck(rt->rng, r, ctx);
  Tensor y = ck.forward({ones(4)}).at(0);
  const double y1 = y.data<double>()[1];
  Tensor consumer_view = y.view({2, 2}, "consumer.input");  // what the next op saved
  ck.discard_output_and_register_recompute("consumer.output");
  EXPECT_TRUE(consumer_view.released());
  EXPECT_THROW(consumer_view.data<double>(), Error);
  EXPECT_THROW(ck.backward({ones(4)}), Error) << "backward before the hook fired must fail";
  draw(rt->rng.device());
  const auto rng_before = rt->rng.all_states();
  ck.recompute();
  EXPECT_EQ(rt->rng.all_states(), rng_before);
  EXPECT_EQ(consumer_view.data<double>()[1], y1) << "views see the recomputed bytes";
  ck.recompute();  // second recompute is a no-op
  EXPECT_EQ(r.forwards, 2);
  auto dx = ck.backward({ones(4)});
  EXPECT_EQ(dx[0].data<double>()[0], y1 / 2.0);
}

}  // namespace
}  // namespace rcts
