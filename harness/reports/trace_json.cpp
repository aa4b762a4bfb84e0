#include "harness/reports/trace_json.hpp"

#include <algorithm>
#include <set>

namespace rcts::harness {

namespace {
constexpr int kMainTid = 0, kD2hTid = 1, kH2dTid = 2;

nlohmann::json meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json complete(const std::string& name, const char* cat, int pid, int tid, double ts, double end) {
  return {{"ph", "X"}, {"name", name}, {"cat", cat}, {"pid", pid}, {"tid", tid}, {"ts", ts},
          {"dur", std::max(0.0, end - ts)}};
}

// "step 0 mb 1 forward" -> ("step 0 mb 1", "forward")
std::pair<std::string, std::string> split_mark(const std::string& label) {
  const size_t sp = label.rfind(' ');
  if (sp == std::string::npos) return {label, ""};
  return {label.substr(0, sp), label.substr(sp + 1)};
}
}  // namespace

nlohmann::json chrome_trace(const std::string& case_id, const std::vector<RunPicture>& runs) {
  nlohmann::json events = nlohmann::json::array();
  double base = 0;
  bool first = true;
  for (const auto& r : runs)
    if (first || r.timeline.origin_us < base) {
      base = r.timeline.origin_us;
      first = false;
    }
  std::set<int> ranks;
  for (const auto& r : runs) {
    if (ranks.insert(r.rank).second) {
      events.push_back(meta("process_name", r.rank, 0, "rank " + std::to_string(r.rank)));
      events.push_back(meta("thread_name", r.rank, kMainTid, "main stream"));
      events.push_back(meta("thread_name", r.rank, kD2hTid, "d2h copy stream"));
      events.push_back(meta("thread_name", r.rank, kH2dTid, "h2d copy stream"));
    }
    const double off = r.timeline.origin_us - base;
    const auto& marks = r.timeline.marks;
    if (!marks.empty()) {
      auto run = complete(r.label, "run", r.rank, kMainTid, off + marks.front().t_us, off + marks.back().t_us);
      run["args"] = {{"summary", r.summary}};
      events.push_back(run);
    }
    // A phase lasts from its mark to the next one.
    for (size_t i = 0; i + 1 < marks.size(); ++i) {
      const auto [mb, phase] = split_mark(marks[i].label);
      if (phase != "forward" && phase != "backward") continue;
      auto e = complete(phase + " " + mb, "phase", r.rank, kMainTid, off + marks[i].t_us, off + marks[i + 1].t_us);
      e["args"] = {{"run", r.label}};
      events.push_back(e);
    }
    for (const auto& c : r.timeline.copies) {
      auto e = complete(c.what, "offload", r.rank, c.stream == "d2h" ? kD2hTid : kH2dTid, off + c.start_us,
                        off + c.end_us);
      e["args"] = {{"bytes", c.bytes}, {"stream", c.stream}, {"run", r.label}};
      events.push_back(e);
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", {{"case", case_id}}}};
}

}  // namespace rcts::harness
