#include "harness/reports/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace rcts::harness {

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string progress_text(const std::string& label, int done, int total, double elapsed_s) {
  const int width = static_cast<int>(std::to_string(total).size());
  char counter[48];
  std::snprintf(counter, sizeof counter, "[%*d/%d]", width, done, total);
  std::string s = label.empty() ? counter : label + " " + counter;
  if (done >= total) return s + " done in " + clock_text(elapsed_s);
  s += " " + clock_text(elapsed_s) + " elapsed";
  if (done > 0) s += ", about " + clock_text(elapsed_s / done * (total - done)) + " left";
  return s;
}

ProgressMeter::ProgressMeter(std::ostream& out, std::string label, bool in_place, double interval_s, Clock clock)
    : out_(out), label_(std::move(label)), in_place_(in_place), interval_s_(interval_s), clock_(std::move(clock)) {
  if (!clock_) {
    const auto t0 = std::chrono::steady_clock::now();
    clock_ = [t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  }
}

void ProgressMeter::begin(int total) {
  total_ = total;
  start_ = last_shown_ = clock_();
}

void ProgressMeter::case_done(int done) {
  const double now = clock_();
  const bool last = done >= total_;
  if (!in_place_ && !last && done != 1 && now - last_shown_ < interval_s_) return;
  last_shown_ = now;
  const std::string text = "rcts: " + progress_text(label_, done, total_, now - start_);
  // "\x1b[K" clears what a longer previous line left on the terminal.
  if (in_place_) out_ << '\r' << text << "\x1b[K" << (last ? "\n" : "");
  else out_ << text << '\n';
  out_.flush();
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

bool progress_wanted_by_default() { return ::isatty(STDOUT_FILENO) == 0 && stderr_is_terminal(); }

}  // namespace rcts::harness
