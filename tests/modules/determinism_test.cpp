// The whole model is deterministic: the same run twice, and with 1 or 2 OpenMP
// threads, gives bitwise-identical losses, outputs and gradients. The dims are big
// enough that the GEMM and the elementwise kernels really split work across threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

Config wide() { return test_support::dense({.hidden = 256, .heads = 4, .seq = 128, .ffn = 1024}); }

bool same(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.bytes(), b.bytes(), static_cast<size_t>(a.nbytes())) == 0;
}

void expect_identical(const RunRecord& a, const RunRecord& b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)), 0);
    EXPECT_TRUE(same(a.outputs[i], b.outputs[i]));
    EXPECT_TRUE(same(a.input_grads[i], b.input_grads[i]));
  }
  for (size_t i = 0; i < a.grads.size(); ++i) EXPECT_TRUE(same(a.grads[i].tensor, b.grads[i].tensor)) << a.grads[i].name;
}

TEST(Determinism, SameRunTwiceIsBitwiseIdentical) { expect_identical(run_cpu(wide()), run_cpu(wide())); }

TEST(Determinism, OneAndTwoThreadsAreBitwiseIdentical) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const RunRecord one = run_cpu(wide());
  omp_set_num_threads(2);
  const RunRecord two = run_cpu(wide());
  omp_set_num_threads(before);
  expect_identical(one, two);
}

}  // namespace
}  // namespace rcts
