// First divergences in execution order and the failing case's reason (divergence.hpp).
#include "harness/checks/divergence.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "harness/checks/checks.hpp"
#include "harness/checks/compare.hpp"
#include "harness/io/hex_bits.hpp"
#include "oracle/philox_masks.hpp"

namespace rcts::harness {

namespace {

ExecPoint point_of(const RunRecord& r, int global_mb, Phase phase) {
  const int per = std::max(1, r.config.run.micro_batches);
  return {global_mb / per, global_mb % per, phase};
}

std::string blocks(const MaskRecord& m) {
  return "seed " + std::to_string(m.seed) + " offset " + std::to_string(m.offset) + " (blocks [" +
         std::to_string(m.offset) + ", " + std::to_string(m.offset + oracle::philox_masks::blocks_for(m.numel)) + "))";
}

std::string draw(const MaskRecord& m) { return m.site + " from '" + m.generator + "' with " + blocks(m); }

// How far a draw's first block is from where it should be, when on the same stream.
std::string lateness(const MaskRecord& got, const MaskRecord& want) {
  if (got.seed != want.seed || got.offset == want.offset) return "";
  const uint64_t d = got.offset > want.offset ? got.offset - want.offset : want.offset - got.offset;
  return "; " + std::to_string(d) + " block(s) " + (got.offset > want.offset ? "late" : "early");
}

// One line on a tensor mismatch, or nullopt when the tensors are equal.
std::optional<std::string> tensor_diff(const Tensor& want, const Tensor& got) {
  if (!want.defined() && !got.defined()) return std::nullopt;
  if (want.defined() != got.defined()) return std::string("present in only one run");
  const BitwiseDiff d = compare_bitwise(want, got);
  if (d.equal) return std::nullopt;
  if (!d.layout_mismatch.empty()) return d.layout_mismatch;
  return std::to_string(d.differing) + " of " + std::to_string(d.numel) + " elements differ, first at " +
         d.first_index_nd + ": expected " + d.expected_hex + ", got " + d.actual_hex + " (" +
         std::to_string(d.ulp_distance) + " ulp)";
}

std::string states_diff(const RngStates& want, const RngStates& got) {
  std::string out;
  auto one = [&](const std::string& name, const GeneratorState* w, const GeneratorState* g) {
    if (w && g && *w == *g) return;
    out += (out.empty() ? "" : "; ") + ("'" + name + "' expected ") + (w ? w->to_string() : "none") + ", got " +
           (g ? g->to_string() : "none");
  };
  one("device-default", &want.device, &got.device);
  one("host", &want.host, &got.host);
  for (const auto& [name, st] : want.tracker) {
    auto it = got.tracker.find(name);
    one(name, &st, it == got.tracker.end() ? nullptr : &it->second);
  }
  for (const auto& [name, st] : got.tracker)
    if (!want.tracker.count(name)) one(name, nullptr, &st);
  return out;
}

std::optional<Divergence> earliest(std::initializer_list<std::optional<Divergence>> all) {
  std::optional<Divergence> best;
  for (const auto& d : all)
    if (d && (!best || d->at < best->at)) best = d;
  return best;
}

}  // namespace

std::optional<Divergence> mask_divergence(const RunRecord& base, const RunRecord& run) {
  std::vector<const MaskRecord*> base_fwd;
  for (const auto& m : base.masks)
    if (!m.recompute) base_fwd.push_back(&m);
  const size_t total = static_cast<size_t>(std::max(1, base.micro_batches_total()));
  const size_t per_mb = base_fwd.size() % total == 0 ? base_fwd.size() / total : 0;
  struct Forward {
    const MaskRecord* m;
    int global_mb;
  };
  // Per (site, step, micro-batch): a pipeline stage holds several micro-batches (design §16).
  std::map<std::tuple<std::string, int, int>, Forward> last_forward;
  size_t k = 0;                                // forward draws so far
  int g = 0;                                   // global micro-batch of the latest forward draw
  for (const MaskRecord& m : run.masks) {
    if (!m.recompute) {
      g = per_mb ? static_cast<int>(k / per_mb) : m.micro_batch;
      const ExecPoint at = point_of(run, g, Phase::forward_draw);
      const std::string stream = expected_stream(m.kind, run.config);
      const uint64_t want_seed = expected_stream_seed(stream, run.config.run.seed, run.coords);
      // design §5's seeds bind only an implementation that declares (seed, offset) streams.
      if (run.seed_offset_rng && (m.generator != stream || m.seed != want_seed))
        return Divergence{at, "forward draw of " + draw(m) + ", design §5 says stream '" + stream + "' seed " +
                                  std::to_string(want_seed)};
      if (k >= base_fwd.size())
        return Divergence{at, "forward draw of " + draw(m) + " has no counterpart: the baseline made " +
                                  std::to_string(base_fwd.size()) + " forward draws"};
      const MaskRecord& b = *base_fwd[k];
      const bool same_blocks = !run.seed_offset_rng || (b.generator == m.generator && b.seed == m.seed && b.offset == m.offset);
      if (b.site != m.site || !same_blocks || b.numel != m.numel || b.digest != m.digest)
        return Divergence{at, "forward draw of " + draw(m) + ", the baseline's drew " + draw(b) +
                                  (b.site == m.site && b.seed == m.seed && b.offset == m.offset ? " (same blocks, other mask)"
                                                                                                 : lateness(m, b))};
      last_forward[{m.site, m.step, m.micro_batch}] = {&m, g};
      ++k;
      continue;
    }
    const ExecPoint at = point_of(run, g, Phase::recompute_draw);
    auto it = last_forward.find({m.site, m.step, m.micro_batch});
    if (it == last_forward.end())
      return Divergence{at, "recompute draw of " + draw(m) + " comes before any forward draw of that site"};
    const MaskRecord& f = *it->second.m;
    const bool same_blocks = !run.seed_offset_rng || (f.seed == m.seed && f.offset == m.offset);
    if (!same_blocks || f.numel != m.numel || f.p != m.p || f.digest != m.digest) {
      const ExecPoint fat = point_of(run, it->second.global_mb, Phase::forward_draw);
      return Divergence{at, "recompute draw of " + draw(m) + ", but the forward draw it replays (step " +
                                std::to_string(fat.step) + " micro-batch " + std::to_string(fat.micro_batch) +
                                ") used " + blocks(f) + lateness(m, f) +
                                (f.seed == m.seed && f.offset == m.offset ? " (same blocks, other mask)" : "")};
    }
  }
  if (k < base_fwd.size())
    return Divergence{point_of(run, std::max(0, run.micro_batches_total() - 1), Phase::forward_draw),
                      "the run made " + std::to_string(k) + " forward draws, the baseline " +
                          std::to_string(base_fwd.size()) + " (first missing: " + draw(*base_fwd[k]) + ")"};
  return std::nullopt;
}

std::optional<Divergence> rng_divergence(const RunRecord& base, const RunRecord& run) {
  if (!run.seed_offset_rng) {
    // Opaque generator states (another implementation's RNG): only equality with the baseline.
    const size_t n = std::min(base.rng_after_opaque.size(), run.rng_after_opaque.size());
    for (size_t i = 0; i < n; ++i)
      if (base.rng_after_opaque[i] != run.rng_after_opaque[i])
        return Divergence{point_of(run, static_cast<int>(i), Phase::rng_after),
                          "generator states after the micro-batch differ from the baseline's (opaque state digests)"};
    return std::nullopt;
  }
  for (const char* stream : {"data-parallel-rng", "model-parallel-rng", "expert-parallel-rng"}) {
    const uint64_t want = expected_stream_seed(stream, run.config.run.seed, run.coords);
    auto it = run.rng_initial.tracker.find(stream);
    if (it == run.rng_initial.tracker.end() || it->second.seed != want || it->second.offset != 0) {
      std::string why = "'";
      why.append(stream).append("' seeded ");
      why.append(it == run.rng_initial.tracker.end() ? std::string("never") : it->second.to_string());
      why.append(", design §5 says seed=").append(std::to_string(want)).append(" offset=0 for tp_rank ");
      why.append(std::to_string(run.coords.tp)).append(", ep_rank ").append(std::to_string(run.coords.ep));
      why.append(", etp_rank ").append(std::to_string(run.coords.etp));
      return Divergence{{0, 0, Phase::seeding}, why};
    }
  }
  const size_t n = std::min(base.rng_after.size(), run.rng_after.size());
  for (size_t i = 0; i < n; ++i)
    if (!(base.rng_after[i] == run.rng_after[i]))
      return Divergence{point_of(run, static_cast<int>(i), Phase::rng_after),
                        states_diff(base.rng_after[i], run.rng_after[i])};
  return std::nullopt;
}

std::optional<Divergence> value_divergence(const RunRecord& base, const RunRecord& run) {
  const size_t n = std::min({base.losses.size(), run.losses.size(), base.outputs.size(), run.outputs.size(),
                             base.input_grads.size(), run.input_grads.size()});
  for (size_t i = 0; i < n; ++i) {
    const int g = static_cast<int>(i);
    if (auto d = tensor_diff(base.outputs[i], run.outputs[i]))
      return Divergence{point_of(run, g, Phase::forward), "block output differs: " + *d};
    if (std::memcmp(&base.losses[i], &run.losses[i], sizeof(double)) != 0)
      return Divergence{point_of(run, g, Phase::forward),
                        "loss expected " + double_hex_bits(base.losses[i]) + ", got " + double_hex_bits(run.losses[i])};
    if (auto d = tensor_diff(base.input_grads[i], run.input_grads[i]))
      return Divergence{point_of(run, g, Phase::backward), "input gradient differs: " + *d};
  }
  const ExecPoint end = point_of(run, std::max(0, run.micro_batches_total() - 1), Phase::step_end);
  if (base.losses.size() != run.losses.size())
    return Divergence{end, std::to_string(run.losses.size()) + " micro-batches, the baseline ran " +
                               std::to_string(base.losses.size())};
  for (size_t i = 0; i < base.grads.size() && i < run.grads.size(); ++i)
    if (auto d = tensor_diff(base.grads[i].tensor, run.grads[i].tensor))
      return Divergence{end, "gradient " + base.grads[i].name + " differs: " + *d};
  for (size_t i = 0; i < base.params.size() && i < run.params.size(); ++i)
    if (auto d = tensor_diff(base.params[i].tensor, run.params[i].tensor))
      return Divergence{end, "parameter " + base.params[i].name + " differs after the step: " + *d};
  for (const auto& [k, v] : run.side_effects) {
    auto it = base.side_effects.find(k);
    if (it == base.side_effects.end() || std::memcmp(&it->second, &v, sizeof v) != 0)
      return Divergence{end, "side effect " + k + " expected " +
                                 (it == base.side_effects.end() ? std::string("none") : double_hex_bits(it->second)) +
                                 ", got " + double_hex_bits(v)};
  }
  return std::nullopt;
}

std::optional<Divergence> first_divergence(const RunRecord& base, const RunRecord& run) {
  return earliest({mask_divergence(base, run), rng_divergence(base, run), value_divergence(base, run)});
}

void place_failures(const RunRecord& base, const RunRecord& run, const std::string& label,
                    std::vector<CheckResult>& checks, size_t from,
                    std::vector<std::pair<std::string, Divergence>>& firsts) {
  bool failed = false;
  for (size_t i = from; i < checks.size(); ++i) {
    CheckResult& c = checks[i];
    if (c.outcome != Outcome::fail && c.outcome != Outcome::error) continue;
    failed = true;
    std::optional<Divergence> d;
    if (c.kind == "masks") d = mask_divergence(base, run);
    else if (c.kind == "rng") d = rng_divergence(base, run);
    else if (c.kind == "bitwise") d = value_divergence(base, run);
    if (d) c.at = d->at;
  }
  if (!failed) return;
  if (auto d = first_divergence(base, run)) firsts.emplace_back(label, *d);
}

std::string failure_reason(const std::vector<std::pair<std::string, Divergence>>& firsts,
                           const std::vector<CheckResult>& checks) {
  std::string out;
  const std::pair<std::string, Divergence>* first = nullptr;
  for (const auto& f : firsts)
    if (!first || f.second.at < first->second.at) first = &f;
  if (first) out = "first divergence (" + first->first + "): " + first->second.at.str() + ": " + first->second.what;
  std::vector<const CheckResult*> failing;
  for (const auto& c : checks)
    if (c.outcome == Outcome::fail || c.outcome == Outcome::error) failing.push_back(&c);
  std::stable_sort(failing.begin(), failing.end(), [](const CheckResult* a, const CheckResult* b) {
    if (a->at.has_value() != b->at.has_value()) return a->at.has_value();
    return a->at && *a->at < *b->at;
  });
  for (const CheckResult* c : failing) out += (out.empty() ? "" : "\n") + c->kind + ": " + c->detail;
  return out;
}

std::string lead_with_rank_divergences(const std::vector<CaseResult>& per_rank, const std::string& merged) {
  static const std::string kLead = "first divergence ";
  auto is_lead = [](const std::string& line) {
    const size_t p = line.rfind("rank ", 0) == 0 ? line.find(": ") : std::string::npos;
    return line.compare(p == std::string::npos ? 0 : p + 2, kLead.size(), kLead) == 0;
  };
  std::string leads;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    const std::string& reason = per_rank[r].reason;
    if (reason.rfind(kLead, 0) != 0) continue;
    if (!leads.empty()) leads += '\n';
    leads.append("rank ").append(std::to_string(r)).append(": ").append(reason, 0, reason.find('\n'));
  }
  if (leads.empty()) return merged;
  std::string rest;
  size_t start = 0;
  while (start <= merged.size()) {
    const size_t end = std::min(merged.find('\n', start), merged.size());
    const std::string line = merged.substr(start, end - start);
    if (!line.empty() && !is_lead(line)) rest += "\n" + line;
    start = end + 1;
  }
  return leads + rest;
}

}  // namespace rcts::harness
