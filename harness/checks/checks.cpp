#include "harness/checks/checks.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "harness/checks/compare.hpp"
#include "harness/checks/mask_oracle.hpp"
#include "harness/checks/memory_inventory.hpp"
#include "harness/checks/offload_invariants.hpp"
#include "harness/checks/pipeline_checks.hpp"
#include "harness/checks/portable_checks.hpp"
#include "harness/io/hex_bits.hpp"
#include "oracle/philox_masks.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "reference/memory_model/offload_memory.hpp"
#include "reference/memory_model/saved_profile.hpp"

namespace rcts::harness {

namespace {

CheckResult pass(const std::string& kind, std::string detail) { return {kind, Outcome::pass, std::move(detail)}; }
CheckResult fail(const std::string& kind, std::string detail) { return {kind, Outcome::fail, std::move(detail)}; }

std::string mb_label(const RunRecord& r, size_t i) {
  const int per = r.config.run.micro_batches;
  return "step " + std::to_string(static_cast<int>(i) / per) + " micro-batch " + std::to_string(static_cast<int>(i) % per);
}

}  // namespace

std::string expected_stream(const std::string& site_kind, const Config& c) {
  if (site_kind == "attention") return "model-parallel-rng";
  if (site_kind == "expert") return "expert-parallel-rng";
  if (site_kind == "hidden") return c.parallel.sequence_parallel ? "model-parallel-rng" : "device-default";
  throw Error("unknown dropout site kind '" + site_kind + "'");
}

uint64_t expected_stream_seed(const std::string& stream, uint64_t seed0, const RankCoords& r) {
  // Megatron-LM seeds pipeline stage p with seed + 100·p first (design §16).
  const uint64_t seed = seed0 + 100 * static_cast<uint64_t>(r.pp);
  if (stream == "device-default" || stream == "data-parallel-rng") return seed;
  if (stream == "model-parallel-rng") return seed + 2718 + static_cast<uint64_t>(r.tp);
  if (stream == "expert-parallel-rng") return seed + 1024 + 100 * static_cast<uint64_t>(r.ep) + static_cast<uint64_t>(r.etp);
  throw Error("no seed rule for RNG stream '" + stream + "'");
}

namespace {

// Why the side effects cannot be compared (a run that did not record them), or nothing.
std::optional<std::string> side_effects_unjudged(const RunRecord& base, const RunRecord& run) {
  for (const RunRecord* r : {&base, &run})
    if (r->not_recorded.count("side_effects")) {
      const auto why = r->not_recorded_why.find("side_effects");
      return "side effects: not recorded by " + r->implementation +
             (why != r->not_recorded_why.end() ? " (" + why->second + ")" : std::string());
    }
  return std::nullopt;
}

// "name: expected x, got y; " for each side effect of `run` the baseline does not share.
std::string side_effect_diff(const RunRecord& base, const RunRecord& run) {
  std::ostringstream os;
  for (const auto& [k, v] : run.side_effects) {
    auto it = base.side_effects.find(k);
    if (it == base.side_effects.end() || it->second != v)
      os << k << ": expected " << (it == base.side_effects.end() ? 0.0 : it->second) << ", got " << v << "; ";
  }
  return os.str();
}

}  // namespace

CheckResult check_bitwise(const RunRecord& base, const RunRecord& run, const std::string& label) {
  const std::string kind = "bitwise";
  if (base.losses.size() != run.losses.size())
    return fail(kind, label + ": " + std::to_string(run.losses.size()) + " micro-batches, baseline has " +
                          std::to_string(base.losses.size()));
  int compared = 0;
  std::vector<std::string> differing;
  std::string first_report;
  auto tensor = [&](const Tensor& want, const Tensor& got, const std::string& name) {
    ++compared;
    if (!want.defined() && !got.defined()) return;
    if (want.defined() != got.defined()) {
      differing.push_back(name);
      if (first_report.empty()) first_report = name + ": present in only one run";
      return;
    }
    BitwiseDiff d = compare_bitwise(want, got);
    if (d.equal) return;
    differing.push_back(name);
    if (first_report.empty()) first_report = d.message();
  };
  if (base.outputs.size() != run.outputs.size())
    return fail(kind, label + ": " + std::to_string(run.outputs.size()) + " outputs, baseline has " +
                          std::to_string(base.outputs.size()));
  // Every pipeline stage has outputs and input grads, only the last one losses (design §16).
  for (size_t i = 0; i < std::max(base.losses.size(), base.outputs.size()); ++i) {
    if (i < base.losses.size()) ++compared;
    if (i < base.losses.size() && std::memcmp(&base.losses[i], &run.losses[i], sizeof(double)) != 0) {
      differing.push_back("loss (" + mb_label(base, i) + ")");
      if (first_report.empty()) {
        std::ostringstream os;
        os.precision(17);
        os << "loss at " << mb_label(base, i) << ": expected " << base.losses[i] << " (" << double_hex_bits(base.losses[i])
           << "), got " << run.losses[i] << " (" << double_hex_bits(run.losses[i]) << ")";
        first_report = os.str();
      }
    }
    if (i >= base.outputs.size()) continue;
    tensor(base.outputs[i], run.outputs[i], "output (" + mb_label(base, i) + ")");
    tensor(base.input_grads[i], run.input_grads[i], "input grad (" + mb_label(base, i) + ")");
  }
  if (base.grads.size() != run.grads.size())
    return fail(kind, label + ": parameter lists differ (" + std::to_string(run.grads.size()) + " vs " +
                          std::to_string(base.grads.size()) + ")");
  for (size_t i = 0; i < base.grads.size(); ++i) {
    tensor(base.grads[i].tensor, run.grads[i].tensor, base.grads[i].name);
    tensor(base.params[i].tensor, run.params[i].tensor, base.params[i].name);
  }
  // Records of dumps also hold every micro-batch's accumulated gradients, and every
  // step's parameters and reduced gradients.
  auto lists = [&](const auto& want, const auto& got, auto where) {
    if (want.empty() || got.empty()) return;
    for (size_t i = 0; i < want.size() && i < got.size(); ++i)
      for (size_t j = 0; j < want[i].size() && j < got[i].size(); ++j)
        tensor(want[i][j].tensor, got[i][j].tensor, want[i][j].name + " (" + where(i) + ")");
  };
  lists(base.grads_after_micro_batch, run.grads_after_micro_batch, [&](size_t i) { return "after " + mb_label(base, i); });
  lists(base.grads_of_step, run.grads_of_step, [](size_t i) { return "step " + std::to_string(i); });
  lists(base.params_before_step, run.params_before_step, [](size_t i) { return "before step " + std::to_string(i); });
  ++compared;
  std::vector<std::string> not_judged;
  if (auto why = side_effects_unjudged(base, run)) not_judged.push_back(*why);
  if (not_judged.empty() && base.side_effects != run.side_effects) {
    differing.push_back("side effects");
    if (first_report.empty())
      first_report = "side effects differ (applied again in recompute?): " + side_effect_diff(base, run);
  }
  if (differing.empty()) {
    CheckResult r = pass(kind, label + ": " + std::to_string(compared) + " values bitwise equal" +
                                   (not_judged.empty() ? "" : "; " + not_judged.front()));
    r.not_judged = std::move(not_judged);
    return r;
  }
  std::string list;
  for (size_t i = 0; i < differing.size() && i < 5; ++i) list += (i ? ", " : "") + differing[i];
  if (differing.size() > 5) list += ", ...";
  CheckResult r = fail(kind, label + ": " + std::to_string(differing.size()) + " of " + std::to_string(compared) +
                                 " differ (" + list + ")\n" + first_report);
  r.not_judged = std::move(not_judged);
  return r;
}

CheckResult check_rng(const RunRecord& base, const RunRecord& run, const std::string& label) {
  if (!base.seed_offset_rng || !run.seed_offset_rng) return check_rng_opaque(base, run, label);
  const std::string kind = "rng";
  const auto& tracker = run.rng_initial.tracker;
  for (const char* stream : {"data-parallel-rng", "model-parallel-rng", "expert-parallel-rng"}) {
    auto it = tracker.find(stream);
    const uint64_t want = expected_stream_seed(stream, run.config.run.seed, run.coords);
    if (it == tracker.end()) return fail(kind, label + ": tracker has no '" + stream + "' state after seeding");
    if (it->second.seed != want || it->second.offset != 0)
      return fail(kind, label + ": '" + std::string(stream) + "' seeded " + it->second.to_string() + ", design §5 says seed=" +
                            std::to_string(want) + " offset=0 for tp_rank " + std::to_string(run.coords.tp) +
                            ", ep_rank " + std::to_string(run.coords.ep) + ", etp_rank " +
                            std::to_string(run.coords.etp));
  }
  if (const uint64_t want = expected_stream_seed("device-default", run.config.run.seed, run.coords);
      run.rng_initial.device.seed != want)
    return fail(kind, label + ": device default generator seeded " + run.rng_initial.device.to_string() +
                          ", expected seed=" + std::to_string(want) + " (pp_rank " + std::to_string(run.coords.pp) + ")");
  if (base.rng_after.size() != run.rng_after.size()) return fail(kind, label + ": micro-batch counts differ");
  for (size_t i = 0; i < base.rng_after.size(); ++i)
    if (!(base.rng_after[i] == run.rng_after[i]))
      return fail(kind, label + ": RNG states after " + mb_label(base, i) + " differ from the baseline\n  expected " +
                            base.rng_after[i].to_string() + "\n  got      " + run.rng_after[i].to_string());
  return pass(kind, label + ": seeds as design §5; states equal after " + std::to_string(run.rng_after.size()) +
                        " micro-batches");
}

CheckResult check_masks(const RunRecord& base, const RunRecord& run, const std::string& label) {
  if (!base.rcts_mask_rule || !run.rcts_mask_rule) return check_masks_portable(base, run, label);
  const std::string kind = "masks";
  int regenerated = 0, recomputed = 0;
  for (const auto& m : run.masks) {
    const std::string stream = expected_stream(m.kind, run.config);
    if (m.generator != stream)
      return fail(kind, label + ": " + m.kind + " dropout " + m.site + " (micro-batch " + std::to_string(m.micro_batch) +
                            ") drew from '" + m.generator + "', design §5 says '" + stream + "'" +
                            (m.kind == "hidden" && run.config.parallel.sequence_parallel
                                 ? " (under sequence parallelism the block runs inside a model-parallel-rng fork)"
                                 : ""));
    const uint64_t want_seed = expected_stream_seed(stream, run.config.run.seed, run.coords);
    if (m.seed != want_seed)
      return fail(kind, label + ": mask of " + m.site + " (micro-batch " + std::to_string(m.micro_batch) +
                            ") drawn from '" + m.generator + "' with seed " + std::to_string(m.seed) +
                            ", design §5 says " + std::to_string(want_seed));
    const std::vector<uint8_t> mask = oracle::philox_masks::dropout_mask(m.seed, m.offset, m.p, m.numel);
    if (oracle::philox_masks::fnv1a64(mask.data(), mask.size()) != m.digest)
      return fail(kind, label + ": mask of " + m.site + " does not regenerate from seed " + std::to_string(m.seed) +
                            " offset " + std::to_string(m.offset) + " under the dropout rule");
    ++regenerated;
    recomputed += m.recompute ? 1 : 0;
  }
  // Streams are drawn contiguously from block 0, recompute draws replay their forward.
  if (auto broken = mask_oracle::check_mask_streams(run)) return fail(kind, label + ": " + *broken);
  // Forward draws equal the baseline's, in order.
  if (auto why = forward_draws_differ(base, run, true)) return fail(kind, label + ": " + *why);
  return pass(kind, label + ": " + std::to_string(regenerated) + " masks regenerate with design §5 seeds, streams drawn "
                        "contiguously, " + std::to_string(recomputed) + " recompute draws replay their forward");
}

namespace {
// After warmup each layer keeps its saved bytes less its offloaded share (design §9):
// the device bytes of every later micro-batch, layer by layer, against the model.
std::optional<std::string> offload_share_differs(const RunRecord& run, const std::string& label, std::string& detail) {
  const auto& o = run.config.offload;
  if (!o.fine_grained_activation_offloading && !o.cpu_offloading) return std::nullopt;
  if (const std::string why = offload_share_unmodelled(run.config); !why.empty()) {
    detail += "; offloaded share not compared (" + why + ")";
    return std::nullopt;
  }
  const StageMemory st = stage_memory(run.config, run.coords.pp);
  const OffloadShare share = offload_share(run.config, st);
  const auto want = st.per_layer_bytes();
  int64_t moved = 0;
  for (size_t l = 0; l < want.size(); ++l) moved += share.layer_bytes(l);
  for (size_t i = 1; i < run.saved_bytes_per_layer.size(); ++i) {
    const auto& measured = run.saved_bytes_per_layer[i];
    for (size_t l = 0; l < want.size(); ++l) {
      const int64_t keep = want[l] - share.layer_bytes(l);
      if (l >= measured.size() || measured[l] != keep)
        return label + ": " + mb_label(run, i) + ": layer " + std::to_string(l) + " kept " +
               (l < measured.size() ? std::to_string(measured[l]) : std::string("nothing")) +
               " bytes on device after its forward, the analytic model says " + std::to_string(want[l]) +
               " saved less an offloaded share of " + std::to_string(share.layer_bytes(l)) + " = " +
               std::to_string(keep);
    }
  }
  detail += "; after warmup each layer keeps them less its offloaded share (" + std::to_string(moved) +
            " bytes a micro-batch)";
  return std::nullopt;
}
}  // namespace

CheckResult check_memory(const MemoryExpect& expect, const RunRecord& base, const RunRecord& run,
                         const std::string& label) {
  const std::string kind = "memory";
  const auto& measured = run.saved_bytes_per_layer.at(0);
  std::string detail;
  if (auto why = held_after_backward(run, label)) return fail(kind, *why);
  const bool framework_profile = !run.memory_profile.empty() && run.memory_profile != kReferenceProfile;
  if (expect.analytic && framework_profile) {
    // A framework's own saved tensors, under the profile its dump declares.
    if (auto why = inventory_differs(run, label, detail)) return fail(kind, *why);
  } else if (expect.analytic) {
    const auto want = stage_memory(run.config, run.coords.pp).per_layer_bytes();
    for (size_t l = 0; l < want.size(); ++l)
      if (l >= measured.size() || measured[l] != want[l])
        return fail(kind, label + ": layer " + std::to_string(l) + " saved " +
                              (l < measured.size() ? std::to_string(measured[l]) : std::string("nothing")) +
                              " bytes, the analytic model says " + std::to_string(want[l]));
    detail += "per-layer bytes equal the analytic model";
    if (auto why = offload_share_differs(run, label, detail)) return fail(kind, *why);
    if (const std::string why = backward_peak_unmodelled(run.config); !why.empty()) {
      detail += "; backward peak not compared (" + why + ")";
    } else if (run.config.parallel.pipeline_model_parallel_size > 1) {
      // Under 1F1B micro-batches overlap: the stage's peak over the whole schedule.
      if (auto why = pipeline_peak_differs(run)) return fail(kind, label + ": " + *why);
      detail += ", in-flight peak as the model (stage " + std::to_string(run.coords.pp) + ")";
    } else if (run.saved_peaks.empty()) {  // a dump without per-micro-batch peaks
      detail += "; backward peak not compared (the run records no saved_peak)";
    } else {
      // Each micro-batch starts with nothing held, so each must peak at the model's value.
      const int64_t peak = stage_memory(run.config).peak_backward_bytes;
      for (size_t i = 0; i < run.saved_peaks.size(); ++i)
        if (run.saved_peaks[i] != peak)
          return fail(kind, label + ": " + mb_label(run, i) + ": saved + checkpoint-input bytes peaked at " +
                                std::to_string(run.saved_peaks[i]) + ", the analytic model's backward peak is " +
                                std::to_string(peak));
      detail += ", backward peak " + std::to_string(peak) + " bytes as the model";
    }
  }
  int64_t total = 0, base_total = 0;
  for (auto b : measured) total += b;
  for (auto b : base.saved_bytes_per_layer.at(0)) base_total += b;
  if (expect.max_ratio) {
    const double ratio = base_total ? static_cast<double>(total) / static_cast<double>(base_total) : 0.0;
    if (ratio > *expect.max_ratio)
      return fail(kind, label + ": saved " + std::to_string(total) + " bytes = " + std::to_string(ratio) +
                            " x baseline (" + std::to_string(base_total) + "), budget ratio " +
                            std::to_string(*expect.max_ratio));
    detail += (detail.empty() ? "" : "; ") + std::string("ratio ") + std::to_string(ratio);
  }
  if (expect.budget_bytes && run.saved_peak > *expect.budget_bytes)
    return fail(kind, label + ": saved-activation peak " + std::to_string(run.saved_peak) + " bytes exceeds the budget " +
                          std::to_string(*expect.budget_bytes));
  return pass(kind, label + ": " + (detail.empty() ? "within budget" : detail) + " (" + std::to_string(total) +
                        " bytes saved per micro-batch)");
}

CheckResult check_offload(const RunRecord& base, const RunRecord& run, const std::string& label) {
  if (!run.offload && !run.offloaded_bytes.empty()) return check_offload_portable(base, run, label);
  const std::string kind = "offload";
  if (!run.offload) return fail(kind, label + ": offload is not enabled in this run");
  const OffloadReport& r = *run.offload;
  const auto& o = run.config.offload;
  if (r.iterations < 2) return fail(kind, label + ": needs at least 2 micro-batches (the first is warmup)");
  std::vector<std::string> names = o.fine_grained_activation_offloading ? o.offload_modules : std::vector<std::string>{};
  if (o.cpu_offloading) names.push_back("layer");
  int64_t moved = 0;
  for (const auto& name : names) {
    auto it = r.by_name.find(name);
    const OffloadGroupStats st = it == r.by_name.end() ? OffloadGroupStats{} : it->second;
    if (st.offloaded_bytes != st.reloaded_bytes)
      return fail(kind, label + ": '" + name + "' offloaded " + std::to_string(st.offloaded_bytes) + " bytes but reloaded " +
                            std::to_string(st.reloaded_bytes));
    moved += st.offloaded_bytes;
  }
  for (const auto& t : r.tensors) {
    if (t.offloaded && t.numel < o.min_offloaded_tensor_size)
      return fail(kind, label + ": " + t.tensor + " (" + std::to_string(t.numel) + " elements) of group " + t.group +
                            " was offloaded below min_offloaded_tensor_size = " +
                            std::to_string(o.min_offloaded_tensor_size) + " elements");
    if (!t.offloaded && t.kept_because == "threshold" && t.numel >= o.min_offloaded_tensor_size)
      return fail(kind, label + ": " + t.tensor + " kept on device by the threshold but has " + std::to_string(t.numel) +
                            " elements");
  }
  // Warmup, the groups each name forms (margin included) and idle modules.
  for (const auto& broken : {warmup_moved_nothing(base, run), groups_moved_their_bytes(run),
                             idle_modules_only_recomputed(run)})
    if (broken) return fail(kind, label + ": " + *broken);
  for (size_t i = 2; i < r.host_pool_allocations.size(); ++i)
    if (r.host_pool_allocations[i] != r.host_pool_allocations[1])
      return fail(kind, label + ": the host pool grew after the first offloading iteration (" +
                            std::to_string(r.host_pool_allocations[1]) + " -> " +
                            std::to_string(r.host_pool_allocations[i]) + " buffers)");
  const bool strict = o.link_bandwidth_gbps <= 0;
  if (strict)
    for (size_t i = 1; i < run.saved_after_forward.size() && i < base.saved_after_forward.size(); ++i)
      if (run.saved_after_forward[i] + run.host_resident_after_forward[i] != base.saved_after_forward[i])
        return fail(kind, label + ": at the end of forward (" + mb_label(run, i) + ") device " +
                              std::to_string(run.saved_after_forward[i]) + " + host " +
                              std::to_string(run.host_resident_after_forward[i]) + " bytes != " +
                              std::to_string(base.saved_after_forward[i]) + " held without offload");
  char wait[32];
  std::snprintf(wait, sizeof wait, "%.3f", r.exposed_wait_s * 1e3);
  std::string table;
  for (const auto& [name, st] : r.by_name) {
    char line[160];
    std::snprintf(line, sizeof line, "\n  %-12s offloaded %10lld  reloaded %10lld  kept %10lld bytes  (%d groups, %d margin)",
                  name.c_str(), static_cast<long long>(st.offloaded_bytes), static_cast<long long>(st.reloaded_bytes),
                  static_cast<long long>(st.kept_bytes), st.groups, st.margin_groups);
    table += line;
  }
  // Wall-clock figures (and, under a link model, the device peak, which depends on when
  // copies finish) go to `timing`: `detail` is the same in every run (docs/json-report.md).
  const std::string peaks = "device peak " + std::to_string(run.device_peak) + " bytes with offload vs " +
                            std::to_string(base.device_peak) + " without";
  CheckResult res = pass(kind, label + ": moved " + std::to_string(moved) + " bytes each way per run" +
                                 (strict ? "; " + peaks : std::string()) + table);
  res.timing = label + ": exposed wait " + wait + " ms" + (strict ? std::string() : "; " + peaks + " (link model)");
  return res;
}

CheckResult check_counts(const std::vector<CountExpect>& expect, const RunRecord& run, const std::string& label) {
  const std::string kind = "counts";
  const int64_t n = run.micro_batches_total();
  int matched_total = 0;
  for (const auto& e : expect) {
    int matched = 0;
    for (const auto& [path, c] : run.counts) {
      if (!glob_match(e.pattern, path)) continue;
      ++matched;
      if (c.original != e.original * n || c.recompute != e.recompute * n)
        return fail(kind, label + ": " + path + " ran forward " + std::to_string(c.original) + " times and recomputed " +
                              std::to_string(c.recompute) + " times over " + std::to_string(n) +
                              " micro-batches; expected " + std::to_string(e.original) + " and " +
                              std::to_string(e.recompute) + " per micro-batch");
    }
    if (!matched) return fail(kind, label + ": no module matches '" + e.pattern + "'");
    matched_total += matched;
  }
  return pass(kind, label + ": " + std::to_string(matched_total) + " module counters as expected");
}

}  // namespace rcts::harness
