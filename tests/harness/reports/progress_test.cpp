// The case counter of long runs (harness progress): the text, the estimate of the time
// left, and when the meter writes (in place on a terminal; throttled in a log).
#include <gtest/gtest.h>

#include <sstream>

#include "harness/reports/progress.hpp"

namespace rcts::harness {
namespace {

TEST(Progress, ClockText) {
  EXPECT_EQ(clock_text(0), "0:00");
  EXPECT_EQ(clock_text(59.4), "0:59");
  EXPECT_EQ(clock_text(61), "1:01");
  EXPECT_EQ(clock_text(3600 + 62), "1:01:02");
  EXPECT_EQ(clock_text(-3), "0:00");
}

TEST(Progress, EstimateIsTheMeanTimePerCaseTimesTheCasesLeft) {
  // 10 of 40 cases in 30 s: 3 s a case, 30 left -> 90 s.
  EXPECT_EQ(progress_text("np2", 10, 40, 30), "np2 [10/40] 0:30 elapsed, about 1:30 left");
  EXPECT_EQ(progress_text("np1", 1, 173, 2), "np1 [  1/173] 0:02 elapsed, about 5:44 left");
  EXPECT_EQ(progress_text("", 0, 5, 0), "[0/5] 0:00 elapsed");
  EXPECT_EQ(progress_text("np4", 5, 5, 142), "np4 [5/5] done in 2:22");
}

TEST(Progress, ALogGetsTheFirstCaseThenAtMostOneLinePerIntervalAndTheLast) {
  double now = 0;
  std::ostringstream out;
  ProgressMeter m(out, "np1", /*in_place=*/false, /*interval_s=*/10, [&] { return now; });
  m.begin(6);
  int done = 0;
  for (double t : {1.0, 4.0, 9.0, 12.0, 13.0, 14.0}) {
    now = t;
    m.case_done(++done);
  }
  EXPECT_EQ(out.str(),
            "rcts: np1 [1/6] 0:01 elapsed, about 0:05 left\n"
            "rcts: np1 [4/6] 0:12 elapsed, about 0:06 left\n"
            "rcts: np1 [6/6] done in 0:14\n");
}

TEST(Progress, ATerminalGetsOneLineRewrittenInPlace) {
  double now = 0;
  std::ostringstream out;
  ProgressMeter m(out, "np2", /*in_place=*/true, 10, [&] { return now; });
  m.begin(2);
  now = 2;
  m.case_done(1);
  now = 4;
  m.case_done(2);
  EXPECT_EQ(out.str(), "\rrcts: np2 [1/2] 0:02 elapsed, about 0:02 left\x1b[K\rrcts: np2 [2/2] done in 0:04\x1b[K\n");
}

}  // namespace
}  // namespace rcts::harness
