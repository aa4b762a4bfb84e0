// Progress of a long `rcts run` a person can read: a case counter with the elapsed time
// and an estimate of the time left, written to stderr so stdout keeps the report. The
// runner calls begin() once and case_done() after every case (RunOptions::meter).
//
// On a terminal the line is rewritten in place; elsewhere (a CI log, mpirun's pipes)
// a new line is written after the first case, then at most every `interval_s`
// seconds, and after the last case, so a log gets a handful of lines, not one per case.
#pragma once
#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>

namespace rcts::harness {

// "np2 [ 12/40] 0:32 elapsed, about 1:10 left": the estimate is the mean time per
// finished case times the cases left; after the last case, "np2 [40/40] done in 1:42".
std::string progress_text(const std::string& label, int done, int total, double elapsed_s);
// Seconds as "m:ss", or "h:mm:ss" from an hour on.
std::string clock_text(double seconds);

class ProgressMeter {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  // `label` names the run ("np2"); `in_place`: rewrite one line (a terminal).
  ProgressMeter(std::ostream& out, std::string label, bool in_place, double interval_s = 10, Clock clock = {});
  void begin(int total);
  void case_done(int done);

 private:
  std::ostream& out_;
  std::string label_;
  bool in_place_;
  double interval_s_;
  Clock clock_;
  double start_ = 0, last_shown_ = 0;
  int total_ = 0;
};

// Whether `rcts run` shows progress when not asked (--progress): when stdout is not
// a terminal (its lines go to a file) but stderr is one (a person is watching).
bool progress_wanted_by_default();
// Whether stderr is a terminal (the meter then rewrites its line in place).
bool stderr_is_terminal();

}  // namespace rcts::harness
