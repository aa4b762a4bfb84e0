// The CUDA launchers' shape and error rules (label cuda; these run on every machine with
// nvcc, with or without a GPU): a block never exceeds what the kernel can run with, and
// a failed launch is an rcts::Error naming the op and the kernel, never a silent pass.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_support.hpp"
#include "backends/cuda/launch.hpp"
#include "backends/cuda/launch_shape.hpp"
#include "tests/cuda/device_kernels.hpp"

namespace rcts {
namespace {

TEST(CudaLaunchShape, BlocksNeverExceedTheKernelsLimit) {
  EXPECT_EQ(cuda::block_threads(256, 1024), 256);
  EXPECT_EQ(cuda::block_threads(1024, 1024), 1024);
  EXPECT_EQ(cuda::block_threads(1024, 640), 640);  // a register-heavy kernel
  EXPECT_EQ(cuda::block_threads(1024, 700), 672);  // whole warps only
  EXPECT_EQ(cuda::block_threads(32, 16), 16);      // a limit below one warp, as is
  EXPECT_EQ(cuda::block_threads(256, 0), 0);       // unknown limit: no launch
  EXPECT_EQ(cuda::grid_blocks(0, 256, 1 << 20), 1u);
  EXPECT_EQ(cuda::grid_blocks(257, 256, 1 << 20), 2u);
  EXPECT_EQ(cuda::grid_blocks(int64_t{1} << 40, 32, 1 << 20), 1u << 20);
}

TEST(CudaLaunchShape, TheFirstFailureIsKeptUntilReported) {
  cuda::LaunchErrors e;
  EXPECT_EQ(e.take(), "");
  e.record("a_kernel", "too many resources requested for launch");
  e.record("b_kernel", "later failure");
  EXPECT_EQ(e.take(), "a_kernel: too many resources requested for launch");
  EXPECT_EQ(e.take(), "");
}

TEST(CudaLaunchErrors, AFailedLaunchIsAnErrorNamingTheKernel) {
  (void)cuda::take_launch_error();
  cuda_test::launch_too_wide();  // fails with or without a device
  try {
    cuda::check_launches("test op");
    FAIL() << "a launch of 2048 threads per block passed silently";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test op"), std::string::npos) << what;
    EXPECT_NE(what.find("too_wide_kernel"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(cuda::check_launches("next op")) << "a reported failure must not be reported again";
  (void)cuda_test::synchronize();
}

TEST(CudaLaunchErrors, ABackendLauncherNamesItsKernel) {
  (void)cuda::take_launch_error();
  // n = 0 on null pointers: a valid launch on a GPU (the grid-stride loop runs no
  // iteration); without a device the kernel's attribute query and launch fail.
  cuda::add<float>(nullptr, nullptr, nullptr, nullptr, 0);
  if (cuda::unavailable_reason().empty()) {
    EXPECT_NO_THROW(cuda::check_launches("add"));
    EXPECT_STREQ(cuda_test::synchronize(), "");
  } else {
    try {
      cuda::check_launches("add");
      FAIL() << "a launch without a device passed silently";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA op 'add': add_kernel: "), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace rcts
