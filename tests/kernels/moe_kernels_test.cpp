// MoE kernels (kernels/cpu/moe.hpp): top-k order and tie-break, aux loss, the
// router's row softmax, the top-k scatter and the combine of expert outputs, each
// against hand computations or plain loops written here from the header's formulas.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "kernels/common/detmath.hpp"
#include "kernels/cpu/moe.hpp"

namespace rcts::cpu {
namespace {

TEST(MoeKernels, TopkTieBreakPrefersHigherProbThenLowerIndex) {
  int32_t out[4];
  const double uniform[4] = {0.25, 0.25, 0.25, 0.25};
  topk_row(uniform, 4, 2, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  const float tail_tie[4] = {0.1f, 0.3f, 0.3f, 0.3f};
  topk_row(tail_tie, 4, 2, out);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 2);
  const double mixed[5] = {0.3, 0.05, 0.3, 0.05, 0.3};
  topk_row(mixed, 5, 4, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 2);
  EXPECT_EQ(out[2], 4);
  EXPECT_EQ(out[3], 1);  // 0.05 twice: the lower index first
  const double ordered[4] = {0.1, 0.2, 0.4, 0.3};
  topk_row(ordered, 4, 3, out);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(out[2], 1);
  EXPECT_THROW(topk_row(ordered, 4, 5, out), std::invalid_argument);
}

TEST(MoeKernels, AuxLossMatchesHandComputation) {
  // 3 tokens, 3 experts, k = 1.
  const double probs[9] = {0.5, 0.3, 0.2, 0.1, 0.6, 0.3, 0.4, 0.4, 0.2};
  const int32_t topk[3] = {0, 1, 0};
  // f = (2/3, 1/3, 0), P = (1/3, 1.3/3, 0.7/3)
  const double expect = 0.1 * 3 * ((2.0 / 3) * (1.0 / 3) + (1.0 / 3) * (1.3 / 3));
  EXPECT_NEAR(aux_loss(probs, topk, 3, 3, 1, 0.1), expect, 1e-15);
  EXPECT_EQ(aux_loss(probs, topk, 0, 3, 1, 0.1), 0.0);
}

TEST(MoeKernels, TopkSelectGathersTheWeightsOfTheChosenExperts) {
  const float probs[6] = {0.2f, 0.5f, 0.3f, 0.6f, 0.1f, 0.3f};  // 2 tokens, 3 experts
  int32_t topk[4];
  float w[4];
  topk_select(topk, w, probs, 2, 3, 2);
  EXPECT_EQ(topk[0], 1);
  EXPECT_EQ(topk[1], 2);
  EXPECT_EQ(topk[2], 0);
  EXPECT_EQ(topk[3], 2);
  EXPECT_EQ(w[0], 0.5f);
  EXPECT_EQ(w[1], 0.3f);
  EXPECT_EQ(w[2], 0.6f);
  EXPECT_EQ(w[3], 0.3f);
}

TEST(MoeKernels, RowSoftmaxFollowsItsOrderAndBackwardIsItsJacobian) {
  const double x[6] = {1.0, -2.0, 0.5, 3.0, 3.0, -1.0};
  double p[6], d[6];
  row_softmax_forward(p, x, 2, 3);
  for (int r = 0; r < 2; ++r) {
    const double m = r == 0 ? 1.0 : 3.0;
    double z = 0;
    double e[3];
    for (int c = 0; c < 3; ++c) z += (e[c] = detmath::exp(x[r * 3 + c] - m));
    for (int c = 0; c < 3; ++c) EXPECT_EQ(p[r * 3 + c], e[c] / z) << r << "," << c;
  }
  const double dy[6] = {0.5, -1.0, 2.0, 1.0, 0.0, -0.5};
  row_softmax_backward(d, dy, p, 2, 3);
  for (int r = 0; r < 2; ++r) {
    double s = 0;
    for (int c = 0; c < 3; ++c) s += dy[r * 3 + c] * p[r * 3 + c];
    for (int c = 0; c < 3; ++c) EXPECT_EQ(d[r * 3 + c], p[r * 3 + c] * (dy[r * 3 + c] - s));
  }
}

TEST(MoeKernels, TopkScatterZeroesAllButTheChosenExperts) {
  std::vector<float> dprobs(6, 7.0f);  // stale values must go
  const int32_t topk[4] = {2, 0, 1, 2};
  const float dw[4] = {1.5f, -2.0f, 0.25f, 4.0f};
  topk_scatter(dprobs.data(), topk, dw, 2, 3, 2);
  EXPECT_EQ(dprobs, (std::vector<float>{-2.0f, 0.0f, 1.5f, 0.0f, 0.25f, 4.0f}));
}

constexpr const double* kNone = nullptr;  // no shared experts

// Two tokens, top-2, h = 3: expert rows in send order at `position`.
struct CombineData {
  std::vector<int64_t> position = {3, 0, 1, 2};
  std::vector<double> weights = {0.25, 0.5, 2.0, -1.0};
  std::vector<double> expert_out = {1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -2, -3};
  std::vector<double> shared = {0.125, 0.25, 0.5, 1, 2, 4};
};

TEST(MoeKernels, CombineSumsWeightedExpertRowsInSlotOrderThenTheSharedTerm) {
  CombineData c;
  std::vector<double> out(6), plain(6);
  moe_combine(out.data(), c.weights.data(), c.expert_out.data(), c.position.data(), c.shared.data(), 2, 2, 3);
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 3; ++i) {
      double acc = 0;
      for (int k = 0; k < 2; ++k) acc = acc + c.weights[t * 2 + k] * c.expert_out[c.position[t * 2 + k] * 3 + i];
      EXPECT_EQ(out[t * 3 + i], acc + c.shared[t * 3 + i]);
    }
  EXPECT_EQ(out[0], 0.25 * -1 + 0.5 * 1 + 0.125);
  moe_combine(plain.data(), c.weights.data(), c.expert_out.data(), c.position.data(), kNone, 2, 2, 3);
  EXPECT_EQ(plain[0], 0.25 * -1 + 0.5 * 1);
}

TEST(MoeKernels, CombineBackwardGivesExpertGradientsAndWeightDotProducts) {
  CombineData c;
  const std::vector<double> dout = {1, -1, 2, 0.5, 0.25, -2};
  std::vector<double> dexpert(12, 99), dw(4, 99);
  moe_combine_backward(dexpert.data(), dw.data(), dout.data(), c.weights.data(), c.expert_out.data(),
                       c.position.data(), 2, 2, 3);
  for (int a = 0; a < 4; ++a) {
    const int t = a / 2;
    const int64_t row = c.position[a];
    double dot = 0;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(dexpert[row * 3 + i], c.weights[a] * dout[t * 3 + i]);
      dot = dot + dout[t * 3 + i] * c.expert_out[row * 3 + i];
    }
    EXPECT_EQ(dw[a], dot);
  }
}

TEST(MoeKernels, InputGradAddsSentRowsThenRouterThenShared) {
  CombineData c;
  const std::vector<double> dsent = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<double> drouter = {0.5, 0.5, 0.5, -1, -1, -1};
  std::vector<double> dx(6);
  moe_input_grad(dx.data(), dsent.data(), c.position.data(), drouter.data(), c.shared.data(), 2, 2, 3);
  EXPECT_EQ(dx[0], ((10.0 + 1.0) + 0.5) + 0.125);
  EXPECT_EQ(dx[5], ((6.0 + 9.0) + -1.0) + 4.0);
  moe_input_grad(dx.data(), dsent.data(), c.position.data(), drouter.data(), kNone, 2, 2, 3);
  EXPECT_EQ(dx[0], (10.0 + 1.0) + 0.5);
}

}  // namespace
}  // namespace rcts::cpu
