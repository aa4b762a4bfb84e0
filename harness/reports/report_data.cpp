#include "harness/reports/report_data.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "reference/core/saved_bytes.hpp"
#include "reference/core/error.hpp"
#include "reference/memory_model/activation_memory.hpp"

namespace rcts::harness {

namespace {

// "layers.12.mlp.fc1.input" -> "mlp.fc1.input"
std::string without_layer(const std::string& key) {
  if (key.rfind("layers.", 0) != 0) return key;
  const size_t dot = key.find('.', 7);
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

std::string summary_of(const Config& c) {
  const auto& r = c.recompute;
  std::string s = "recompute " + r.recompute_granularity.value_or("none");
  if (r.recompute_method) s += " " + *r.recompute_method + (r.recompute_num_layers ? " " + std::to_string(*r.recompute_num_layers) : "");
  if (r.recompute_granularity == "selective") {
    s += " [";
    for (size_t i = 0; i < r.recompute_modules.size(); ++i) s += (i ? "," : "") + r.recompute_modules[i];
    s += "]";
  }
  const auto& o = c.offload;
  if (o.fine_grained_activation_offloading) {
    s += "; offload [";
    for (size_t i = 0; i < o.offload_modules.size(); ++i) s += (i ? "," : "") + o.offload_modules[i];
    s += "]";
  }
  if (o.cpu_offloading) s += "; cpu_offloading " + std::to_string(o.cpu_offloading_num_layers) + " layers";
  if (c.parallel.tensor_model_parallel_size > 1)
    s += "; tp " + std::to_string(c.parallel.tensor_model_parallel_size) + (c.parallel.sequence_parallel ? " sp" : "");
  return s;
}

}  // namespace

std::string module_of(const std::string& save_key) {
  const std::string k = without_layer(save_key);
  const size_t dot = k.rfind('.');
  return dot == std::string::npos ? k : k.substr(0, dot);
}

RunPicture picture_of(const RunRecord& r, const std::string& label, int rank) {
  RunPicture p;
  p.label = label;
  p.rank = rank;
  p.summary = summary_of(r.config);
  if (!r.saved_bytes_per_layer.empty()) p.layer_measured = r.saved_bytes_per_layer.front();
  p.measured_peaks = r.saved_peaks;
  p.offload = r.offload.has_value();

  // Measured per module: forward saves of the first micro-batch, each storage once.
  std::vector<std::string> order;
  std::map<std::string, int64_t> measured;
  for (const SaveRecord* s : distinct_forward_saves(r.saves)) {
    const std::string m = module_of(s->key());
    if (!measured.count(m)) order.push_back(m);
    measured[m] += s->bytes;
  }
  std::map<std::string, int64_t> model;
  std::vector<std::string> model_order;
  if (r.config.model.num_moe_experts > 0) {
    p.model_note = "the analytic model covers dense layers only";
  } else {
    try {
      const StageMemory st = stage_memory(r.config);
      p.layer_model = st.per_layer_bytes();
      for (const auto& layer : st.layers)
        for (const auto& t : layer.tensors) {
          const std::string m = module_of(t.name);
          if (!model.count(m)) model_order.push_back(m);
          model[m] += t.bytes;
        }
      const std::string why = backward_peak_unmodelled(r.config);
      if (why.empty()) p.model_peak = st.peak_backward_bytes;
      else p.model_note = "backward peak not modelled: " + why;
    } catch (const std::exception& e) {
      p.model_note = std::string("no analytic figures: ") + e.what();
    }
  }
  for (const auto& m : model_order)
    if (!measured.count(m)) order.push_back(m);
  for (const auto& m : order) {
    ModuleBytes b{m, measured.count(m) ? measured[m] : 0, std::nullopt};
    if (!p.layer_model.empty()) b.model = model.count(m) ? model[m] : 0;
    p.modules.push_back(b);
  }
  p.timeline = r.timeline;
  p.timeline.samples = downsample(r.timeline.samples, kMaxTimelinePoints);
  return p;
}

std::vector<TimelineSample> downsample(const std::vector<TimelineSample>& s, size_t points) {
  if (points == 0 || s.size() <= 2 * points) return s;
  std::vector<TimelineSample> out;
  const size_t n = s.size();
  for (size_t b = 0; b < points; ++b) {
    const size_t lo = b * n / points, hi = (b + 1) * n / points;
    if (lo >= hi) continue;
    size_t dev = lo, host = lo;
    for (size_t i = lo; i < hi; ++i) {
      if (s[i].device_bytes > s[dev].device_bytes) dev = i;
      if (s[i].host_bytes > s[host].host_bytes) host = i;
    }
    out.push_back(s[std::min(dev, host)]);
    if (dev != host) out.push_back(s[std::max(dev, host)]);
  }
  return out;
}

namespace {
const TimelineSample* sample_before(const TimelineRecord& t, int64_t seq) {
  const TimelineSample* best = nullptr;
  for (const auto& s : t.samples)
    if (s.seq < seq) best = &s;
    else break;
  return best;
}
}  // namespace

int64_t device_at(const TimelineRecord& t, int64_t seq) {
  const auto* s = sample_before(t, seq);
  return s ? s->device_bytes : 0;
}

int64_t host_at(const TimelineRecord& t, int64_t seq) {
  const auto* s = sample_before(t, seq);
  return s ? s->host_bytes : 0;
}

nlohmann::json to_json(const RunPicture& p) {
  nlohmann::json j;
  j["label"] = p.label;
  j["rank"] = p.rank;
  j["summary"] = p.summary;
  j["layer_measured"] = p.layer_measured;
  j["layer_model"] = p.layer_model;
  j["model_note"] = p.model_note;
  j["modules"] = nlohmann::json::array();
  for (const auto& m : p.modules) {
    nlohmann::json e = {{"module", m.module}, {"measured", m.measured}};
    if (m.model) e["model"] = *m.model;
    j["modules"].push_back(e);
  }
  if (p.model_peak) j["model_peak"] = *p.model_peak;
  j["measured_peaks"] = p.measured_peaks;
  j["offload"] = p.offload;
  auto& t = j["timeline"];
  t["truncated"] = p.timeline.truncated;
  t["origin_us"] = p.timeline.origin_us;
  t["samples"] = nlohmann::json::array();
  for (const auto& s : p.timeline.samples) t["samples"].push_back({s.seq, s.device_bytes, s.host_bytes});
  t["marks"] = nlohmann::json::array();
  for (const auto& m : p.timeline.marks) t["marks"].push_back({m.seq, m.t_us, m.label});
  t["copies"] = nlohmann::json::array();
  for (const auto& c : p.timeline.copies) t["copies"].push_back({c.stream, c.what, c.bytes, c.start_us, c.end_us});
  return j;
}

RunPicture picture_from_json(const nlohmann::json& j) {
  RunPicture p;
  p.label = j.at("label").get<std::string>();
  p.rank = j.at("rank").get<int>();
  p.summary = j.at("summary").get<std::string>();
  p.layer_measured = j.at("layer_measured").get<std::vector<int64_t>>();
  p.layer_model = j.at("layer_model").get<std::vector<int64_t>>();
  p.model_note = j.at("model_note").get<std::string>();
  for (const auto& e : j.at("modules")) {
    ModuleBytes m{e.at("module").get<std::string>(), e.at("measured").get<int64_t>(), std::nullopt};
    if (e.contains("model")) m.model = e["model"].get<int64_t>();
    p.modules.push_back(m);
  }
  if (j.contains("model_peak")) p.model_peak = j["model_peak"].get<int64_t>();
  p.measured_peaks = j.at("measured_peaks").get<std::vector<int64_t>>();
  p.offload = j.at("offload").get<bool>();
  const auto& t = j.at("timeline");
  p.timeline.truncated = t.at("truncated").get<bool>();
  p.timeline.origin_us = t.at("origin_us").get<double>();
  for (const auto& s : t.at("samples"))
    p.timeline.samples.push_back({s.at(0).get<int64_t>(), s.at(1).get<int64_t>(), s.at(2).get<int64_t>()});
  for (const auto& m : t.at("marks"))
    p.timeline.marks.push_back({m.at(0).get<int64_t>(), m.at(1).get<double>(), m.at(2).get<std::string>()});
  for (const auto& c : t.at("copies"))
    p.timeline.copies.push_back({c.at(0).get<std::string>(), c.at(1).get<std::string>(), c.at(2).get<int64_t>(),
                                 c.at(3).get<double>(), c.at(4).get<double>()});
  return p;
}

}  // namespace rcts::harness
