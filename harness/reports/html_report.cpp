#include "harness/reports/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace rcts::harness {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  return o;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// 1536 -> "1.5 KiB" (axis labels; tables carry exact bytes).
std::string human(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (std::fabs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

// A round step (1, 2 or 5 times a power of ten, in the unit human() prints) so that
// about five ticks cover [0, max].
int64_t tick_step(int64_t max) {
  if (max <= 0) return 1;
  int64_t unit = 1;
  while (unit <= (int64_t{1} << 50) && max / (unit * 1024) >= 1) unit *= 1024;
  int64_t step = unit;
  while (max / step > 5) {
    if (max / (step * 2) <= 5) return step * 2;
    if (max / (step * 5) <= 5) return step * 5;
    step *= 10;
  }
  return step;
}

const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                          "#9c755f", "#bab0ac"};
std::string color(size_t i) { return kPalette[i % (sizeof kPalette / sizeof kPalette[0])]; }

struct Series {
  std::string name;
  std::string color;
  bool model = false;  // the analytic figure: drawn hollow beside the measured bar
  std::vector<std::optional<int64_t>> values;
};

constexpr int kTop = 30, kLeft = 80, kBottom = 70, kPlotH = 220;

std::string y_axis(std::ostringstream& os, int64_t max, int width) {
  const int64_t step = tick_step(max);
  const int64_t top = std::max<int64_t>(step, (max + step - 1) / step * step);
  for (int64_t v = 0; v <= top; v += step) {
    const double y = kTop + kPlotH - static_cast<double>(v) / static_cast<double>(top) * kPlotH;
    os << "<line x1='" << kLeft << "' x2='" << width - 10 << "' y1='" << num(y) << "' y2='" << num(y)
       << "' class='grid'/><text x='" << kLeft - 6 << "' y='" << num(y + 4) << "' class='tick' text-anchor='end'>"
       << human(v) << "</text>";
  }
  return std::to_string(top);
}

// Grouped bars: per category one bar per series.
std::string bar_chart(const std::string& cls, const std::vector<std::string>& cats, const std::vector<Series>& series) {
  int64_t max = 0;
  for (const auto& s : series)
    for (const auto& v : s.values) max = std::max<int64_t>(max, v.value_or(0));
  const int bar = series.size() > 6 ? 8 : 14;
  const int group = static_cast<int>(series.size()) * bar + 16;
  const int width = std::max(680, kLeft + group * static_cast<int>(cats.size()) + 20);
  const int legend_rows = static_cast<int>((series.size() + 3) / 4);
  const int height = kTop + kPlotH + kBottom + 18 * legend_rows;
  std::ostringstream os;
  os << "<svg xmlns='http://www.w3.org/2000/svg' class='chart " << cls << "' width='" << width << "' height='"
     << height << "' viewBox='0 0 " << width << ' ' << height << "'>";
  const double top = std::stod(y_axis(os, max, width));
  for (size_t c = 0; c < cats.size(); ++c) {
    const int x0 = kLeft + 8 + static_cast<int>(c) * group;
    for (size_t s = 0; s < series.size(); ++s) {
      const auto& v = series[s].values[c];
      if (!v) continue;
      const double h = static_cast<double>(*v) / top * kPlotH;
      const int x = x0 + static_cast<int>(s) * bar;
      os << "<rect x='" << x << "' y='" << num(kTop + kPlotH - h) << "' width='" << bar - 2 << "' height='" << num(h)
         << "' class='" << (series[s].model ? "model" : "measured") << "' data-series='" << esc(series[s].name)
         << "' data-category='" << esc(cats[c]) << "' data-bytes='" << *v << "' style='"
         << (series[s].model ? "fill:none;stroke:" : "fill:") << series[s].color << "'><title>" << esc(series[s].name)
         << ", " << esc(cats[c]) << ": " << *v << " bytes</title></rect>";
    }
    os << "<text class='cat' transform='translate(" << x0 + group / 2 - 8 << "," << kTop + kPlotH + 12
       << ") rotate(30)'>" << esc(cats[c]) << "</text>";
  }
  os << "<line x1='" << kLeft << "' x2='" << kLeft << "' y1='" << kTop << "' y2='" << kTop + kPlotH << "' class='axis'/>";
  for (size_t s = 0; s < series.size(); ++s) {
    const int lx = kLeft + static_cast<int>(s % 4) * 150, ly = kTop + kPlotH + kBottom + 18 * static_cast<int>(s / 4);
    os << "<rect x='" << lx << "' y='" << ly - 9 << "' width='10' height='10' style='"
       << (series[s].model ? "fill:none;stroke:" : "fill:") << series[s].color << "'/><text x='" << lx + 14 << "' y='"
       << ly << "' class='legend'>" << esc(series[s].name) << "</text>";
  }
  os << "</svg>";
  return os.str();
}

std::string table(const std::vector<std::string>& cats, const std::vector<Series>& series, const std::string& first) {
  std::ostringstream os;
  os << "<table class='numbers'><tr><th>" << esc(first) << "</th>";
  for (const auto& s : series) os << "<th>" << esc(s.name) << "</th>";
  os << "</tr>";
  for (size_t c = 0; c < cats.size(); ++c) {
    os << "<tr><td>" << esc(cats[c]) << "</td>";
    for (const auto& s : series) os << "<td>" << (s.values[c] ? std::to_string(*s.values[c]) : "") << "</td>";
    os << "</tr>";
  }
  os << "</table>";
  return os.str();
}

void layer_section(std::ostringstream& os, const std::vector<const RunPicture*>& runs) {
  size_t layers = 0;
  for (const auto* r : runs) layers = std::max({layers, r->layer_measured.size(), r->layer_model.size()});
  std::vector<std::string> cats;
  for (size_t l = 0; l < layers; ++l) cats.push_back("layer " + std::to_string(l));
  std::vector<Series> series;
  for (size_t i = 0; i < runs.size(); ++i) {
    Series m{runs[i]->label, color(i), false, {}}, a{runs[i]->label + " (model)", color(i), true, {}};
    for (size_t l = 0; l < layers; ++l) {
      m.values.push_back(l < runs[i]->layer_measured.size() ? std::optional(runs[i]->layer_measured[l]) : std::nullopt);
      a.values.push_back(l < runs[i]->layer_model.size() ? std::optional(runs[i]->layer_model[l]) : std::nullopt);
    }
    series.push_back(m);
    if (!runs[i]->layer_model.empty()) series.push_back(a);
  }
  os << "<h3>Saved bytes per layer (first micro-batch)</h3><p class='note'>Filled: measured; outlined: the analytic "
        "model (Korthikanti et al. 2022, as rcts derives it per recompute mode).</p>"
     << bar_chart("per-layer", cats, series) << table(cats, series, "layer");
}

void module_section(std::ostringstream& os, const std::vector<const RunPicture*>& runs) {
  std::vector<std::string> cats;
  for (const auto* r : runs)
    for (const auto& m : r->modules)
      if (std::find(cats.begin(), cats.end(), m.module) == cats.end()) cats.push_back(m.module);
  std::vector<Series> series;
  for (size_t i = 0; i < runs.size(); ++i) {
    Series m{runs[i]->label, color(i), false, {}}, a{runs[i]->label + " (model)", color(i), true, {}};
    bool any_model = false;
    for (const auto& c : cats) {
      auto it = std::find_if(runs[i]->modules.begin(), runs[i]->modules.end(), [&](const auto& b) { return b.module == c; });
      m.values.push_back(it == runs[i]->modules.end() ? std::optional<int64_t>(0) : std::optional(it->measured));
      a.values.push_back(it == runs[i]->modules.end() ? std::optional<int64_t>(runs[i]->layer_model.empty() ? std::nullopt : std::optional<int64_t>(0))
                                                      : it->model);
      any_model = any_model || (it != runs[i]->modules.end() && it->model);
    }
    series.push_back(m);
    if (any_model) series.push_back(a);
  }
  os << "<h3>Saved bytes per module, all layers (first micro-batch)</h3><p class='note'>A tensor saved twice is "
        "counted once, under its first saver.</p>"
     << bar_chart("per-module", cats, series) << table(cats, series, "module");
}

void timeline_section(std::ostringstream& os, const RunPicture& r, size_t index) {
  const auto& t = r.timeline;
  os << "<h4 id='rank" << r.rank << "-run" << index << "'>" << esc(r.label) << " <span class='summary'>" << esc(r.summary) << "</span></h4>";
  if (t.samples.empty()) {
    os << "<p class='note'>nothing was held for backward</p>";
    return;
  }
  const int width = 900, height = kTop + kPlotH + 40;
  const int64_t seq_max = std::max<int64_t>(1, t.samples.back().seq + 1);
  int64_t max = r.model_peak.value_or(0);
  const TimelineSample* peak = &t.samples.front();
  int64_t host_peak = 0;
  for (const auto& s : t.samples) {
    max = std::max({max, s.device_bytes, s.host_bytes});
    if (s.device_bytes > peak->device_bytes) peak = &s;
    host_peak = std::max(host_peak, s.host_bytes);
  }
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' class='chart timeline' data-run='" << esc(r.label) << "' width='"
      << width << "' height='" << height << "' viewBox='0 0 " << width << ' ' << height << "'>";
  const double top = std::stod(y_axis(svg, max, width));
  auto X = [&](int64_t seq) { return kLeft + static_cast<double>(seq) / static_cast<double>(seq_max) * (width - kLeft - 20); };
  auto Y = [&](int64_t b) { return kTop + kPlotH - static_cast<double>(b) / top * kPlotH; };
  for (const auto& m : t.marks) {
    const size_t sp = m.label.rfind(' ');
    const std::string phase = sp == std::string::npos ? m.label : m.label.substr(sp + 1);
    if (phase == "end") continue;
    svg << "<line x1='" << num(X(m.seq)) << "' x2='" << num(X(m.seq)) << "' y1='" << kTop << "' y2='" << kTop + kPlotH
        << "' class='mark " << phase << "'><title>" << esc(m.label) << "</title></line>";
    svg << "<text x='" << num(X(m.seq) + 2) << "' y='" << kTop - 4 << "' class='marklabel'>" << (phase == "forward" ? "F" : "B")
        << "</text>";
  }
  auto line = [&](bool host, const std::string& cls, const std::string& col) {
    svg << "<polyline class='" << cls << "' style='stroke:" << col << "' points='" << num(X(0)) << ',' << num(Y(0));
    int64_t prev = 0;
    for (const auto& s : t.samples) {
      const int64_t v = host ? s.host_bytes : s.device_bytes;
      svg << ' ' << num(X(s.seq)) << ',' << num(Y(prev)) << ' ' << num(X(s.seq)) << ',' << num(Y(v));
      prev = v;
    }
    svg << ' ' << num(X(seq_max)) << ',' << num(Y(prev)) << "'/>";
  };
  line(false, "device", color(index));
  if (r.offload) line(true, "host", "#999");
  if (r.model_peak)
    svg << "<line x1='" << kLeft << "' x2='" << width - 20 << "' y1='" << num(Y(*r.model_peak)) << "' y2='"
        << num(Y(*r.model_peak)) << "' class='model-peak'><title>model backward peak " << *r.model_peak
        << " bytes</title></line>";
  svg << "<circle class='peak' cx='" << num(X(peak->seq)) << "' cy='" << num(Y(peak->device_bytes))
      << "' r='5' data-bytes='" << peak->device_bytes << "'><title>peak " << peak->device_bytes
      << " bytes</title></circle><text class='peaklabel' x='" << num(X(peak->seq) + 8) << "' y='"
      << num(Y(peak->device_bytes) + 4) << "'>peak " << human(peak->device_bytes) << "</text>";
  svg << "<text class='tick' x='" << kLeft << "' y='" << height - 8 << "'>events in run order (F: a micro-batch's "
      << "forward starts, B: its backward) — solid: device, saved + checkpoint inputs"
      << (r.offload ? "; grey: offloaded, on the host" : "") << (r.model_peak ? "; dashed: model backward peak" : "")
      << "</text></svg>";
  os << svg.str();
  os << "<table class='numbers'><tr><th>device peak</th><td class='device-peak'>" << peak->device_bytes << "</td></tr>";
  if (r.model_peak) os << "<tr><th>model backward peak</th><td>" << *r.model_peak << "</td></tr>";
  if (r.offload) os << "<tr><th>host peak (offloaded)</th><td class='host-peak'>" << host_peak << "</td></tr>";
  os << "<tr><th>measured peak per micro-batch</th><td>";
  for (size_t i = 0; i < r.measured_peaks.size(); ++i) os << (i ? " " : "") << r.measured_peaks[i];
  os << "</td></tr></table>";
  if (t.truncated) os << "<p class='note'>the timeline was cut off after its sample limit</p>";
  if (!r.model_note.empty()) os << "<p class='note'>" << esc(r.model_note) << "</p>";
}

const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em;color:#222}h1{font-size:1.4em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right;font-size:.85em}th{background:#f4f4f4}"
    ".pass{color:#2a7d2a}.fail,.error{color:#b22}.skip,.xfail{color:#888}.note{color:#666;font-size:.85em}"
    ".summary{color:#666;font-weight:normal;font-size:.85em}svg .grid{stroke:#eee}svg .axis{stroke:#444}"
    "svg text{font-size:11px;fill:#333}svg polyline{fill:none;stroke-width:1.5}svg .host{stroke-dasharray:3 2}"
    "svg .mark{stroke:#ccc}svg .mark.backward{stroke:#f0a0a0}svg .model-peak{stroke:#000;stroke-dasharray:6 4}"
    "svg .peak{fill:#d00}svg .model{stroke-width:1.5}td:first-child{text-align:left}";

std::string head(const std::string& title) {
  return "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + esc(title) + "</title><style>" + kStyle +
         "</style></head><body>";
}

}  // namespace

std::string page_name(const std::string& id, const std::string& backend) {
  return id + (backend.empty() ? "" : "." + backend) + ".html";
}

std::string case_page_html(const CasePage& p) {
  std::ostringstream os;
  const auto& r = p.result;
  os << head("rcts " + r.id) << "<p><a href='index.html'>all cases</a></p><h1>" << esc(r.id) << " <span class='"
     << outcome_name(r.outcome) << "'>" << outcome_label(r.outcome) << "</span></h1><p>" << esc(p.description)
     << "</p><p class='note'>" << esc(r.file) << (r.backend.empty() ? "" : " · backend " + esc(r.backend)) << " · "
     << p.world_size << " rank(s)</p>";
  if (!r.reason.empty()) os << "<pre class='reason'>" << esc(r.reason) << "</pre>";
  if (!r.checks.empty()) {
    os << "<table class='checks'><tr><th>check</th><th>outcome</th><th>detail</th></tr>";
    for (const auto& c : r.checks)
      os << "<tr><td>" << esc(c.kind) << "</td><td class='" << outcome_name(c.outcome) << "'>" << outcome_label(c.outcome)
         << "</td><td style='text-align:left'>" << esc(c.detail) << "</td></tr>";
    os << "</table>";
  }
  if (!p.trace_file.empty())
    os << "<p>Offload copy streams and micro-batch phases: <a href='" << esc(p.trace_file) << "'>" << esc(p.trace_file)
       << "</a> (Chrome trace JSON; open in ui.perfetto.dev or chrome://tracing).</p>";
  std::set<int> ranks;
  for (const auto& run : p.runs) ranks.insert(run.rank);
  if (p.runs.empty()) os << "<p class='note'>no run recorded (the case did not run its configs)</p>";
  for (int rank : ranks) {
    std::vector<const RunPicture*> runs;
    for (const auto& run : p.runs)
      if (run.rank == rank) runs.push_back(&run);
    os << "<section class='rank' data-rank='" << rank << "'>";
    if (p.world_size > 1) os << "<h2>rank " << rank << "</h2>";
    layer_section(os, runs);
    module_section(os, runs);
    os << "<h3>Bytes held for backward over the run</h3>";
    for (size_t i = 0; i < runs.size(); ++i) timeline_section(os, *runs[i], i);
    os << "</section>";
  }
  os << "</body></html>\n";
  return os.str();
}

std::string index_html(const RunHeader& h, const std::vector<IndexEntry>& entries) {
  std::ostringstream os;
  std::vector<CaseResult> results;
  for (const auto& e : entries) results.push_back(e.result);
  os << head("rcts report") << "<h1>rcts report</h1><p class='note'>rcts " << esc(h.version) << " (" << esc(h.git_sha)
     << ") · backend " << esc(h.backend) << " · " << h.ranks << " rank(s) · " << esc(h.started_at) << "</p><p>"
     << esc(summary_line(results)) << "</p><table class='cases'><tr><th>case</th><th>backend</th><th>outcome</th>"
     << "<th>seconds</th><th>reason</th></tr>";
  for (const auto& e : entries) {
    const auto& r = e.result;
    os << "<tr><td>" << (e.page.empty() ? esc(r.id) : "<a href='" + esc(e.page) + "'>" + esc(r.id) + "</a>") << "</td><td>"
       << esc(r.backend) << "</td><td class='" << outcome_name(r.outcome) << "'>" << outcome_label(r.outcome)
       << "</td><td>" << num(r.seconds) << "</td><td style='text-align:left'>"
       << esc(r.reason.substr(0, r.reason.find('\n'))) << "</td></tr>";
  }
  os << "</table></body></html>\n";
  return os.str();
}

}  // namespace rcts::harness
