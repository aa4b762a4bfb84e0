// The pool/tracker cross-check of device memory: a pool below the tracker is named as a
// tracker that over-counts; a pool at or above it (rounding, stream-ordered frees) is fine;
// a backend without a pool (the CPU) is never checked.
#include <gtest/gtest.h>

#include "harness/checks/device_pool_check.hpp"
#include "reference/config/config.hpp"
#include "tests/support/run.hpp"

namespace rcts::harness {
namespace {

RunRecord record(int64_t tracker_peak, std::optional<int64_t> pool) {
  RunRecord r;
  r.backend = "cuda";
  r.device_peak = tracker_peak;
  r.device_pool_high_water = pool;
  return r;
}

TEST(DevicePoolCheck, APoolBelowTheTrackerIsAnError) {
  const auto why = device_pool_disagreement(record(4096, 4095));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("(4095 bytes) is below the tracker's device peak (4096 bytes)"), std::string::npos) << *why;
}

TEST(DevicePoolCheck, APoolAtOrAboveTheTrackerAgrees) {
  EXPECT_FALSE(device_pool_disagreement(record(4096, 4096)));
  EXPECT_FALSE(device_pool_disagreement(record(4096, 1 << 20)));
  EXPECT_EQ(device_pool_summary(record(4096, 8192)),
            "pool high water 8192 bytes, tracker device peak 4096 bytes (pool/tracker 2.000)");
}

TEST(DevicePoolCheck, TheCpuBackendHasNoPoolAndIsNotChecked) {
  Config cfg;
  cfg.model.num_layers = 1;
  const RunRecord r = test_support::run_cpu(cfg);
  EXPECT_FALSE(r.device_pool_high_water);
  EXPECT_GT(r.device_peak, 0);
  EXPECT_FALSE(device_pool_disagreement(r));
  EXPECT_EQ(device_pool_summary(r), "");
}

}  // namespace
}  // namespace rcts::harness
