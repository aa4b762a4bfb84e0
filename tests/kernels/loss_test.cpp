// Loss and optimizer kernels (kernels/cpu/loss.hpp): the loss is one sum in index
// order (a reordered sum gives other bits on these inputs), its gradient and the SGD
// step follow the header's expressions.
#include "kernels/cpu/loss.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rcts::cpu {
namespace {

TEST(CpuLoss, MseIsHalfTheMeanSquareSummedInIndexOrder) {
  // Squares 1e8 (ulp 8), 4, 4: in index order (1e8 + 4) + 4 = 1e8 (ties to even twice);
  // in reverse order (4 + 4) + 1e8 = 1e8 + 8. The index order is the contract.
  const std::vector<float> y = {1e4f, 2.0f, 2.0f}, t(3, 0.0f);
  EXPECT_EQ(mse_loss(y.data(), t.data(), 3), 1e8f * 0.5f / 3.0f);
  const std::vector<float> r(y.rbegin(), y.rend());
  EXPECT_EQ(mse_loss(r.data(), t.data(), 3), (1e8f + 8.0f) * 0.5f / 3.0f);
  const std::vector<double> yd = {1.5, -2.0, 0.25}, td = {0.5, 1.0, 0.25};
  EXPECT_EQ(mse_loss(yd.data(), td.data(), 3), (1.0 + 9.0 + 0.0) * 0.5 / 3.0);
}

TEST(CpuLoss, GradientAndSgdStep) {
  const std::vector<double> y = {1.5, -2.0, 0.25}, t = {0.5, 1.0, 0.25};
  std::vector<double> dy(3);
  mse_loss_backward(dy.data(), y.data(), t.data(), 3);
  EXPECT_EQ(dy, (std::vector<double>{1.0 / 3.0, -3.0 / 3.0, 0.0}));
  std::vector<float> w = {1.0f, -1.0f, 0.5f};
  const std::vector<float> g = {0.5f, 2.0f, -64.0f};
  sgd_step(w.data(), g.data(), 3, 0.015625f);
  EXPECT_EQ(w, (std::vector<float>{1.0f - 0.0078125f, -1.0f - 0.03125f, 0.5f + 1.0f}));
}

}  // namespace
}  // namespace rcts::cpu
