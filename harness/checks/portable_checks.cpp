#include "harness/checks/portable_checks.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/checks/checks.hpp"

namespace rcts::harness {

namespace {

CheckResult pass(const std::string& kind, std::string detail) { return {kind, Outcome::pass, std::move(detail)}; }
CheckResult fail(const std::string& kind, std::string detail) { return {kind, Outcome::fail, std::move(detail)}; }

std::string mb_label(const RunRecord& r, size_t i) {
  const int per = r.config.run.micro_batches;
  return "step " + std::to_string(static_cast<int>(i) / per) + " micro-batch " + std::to_string(static_cast<int>(i) % per);
}

std::string draw_str(const MaskRecord& m) {
  return m.site + " (step " + std::to_string(m.step) + " micro-batch " + std::to_string(m.micro_batch) + ")";
}

// How many elements of two masks of equal size differ (both kept their bytes).
int64_t differing(const MaskRecord& a, const MaskRecord& b) {
  if (!a.mask.defined() || !b.mask.defined() || a.numel != b.numel) return -1;
  const auto* x = reinterpret_cast<const uint8_t*>(a.mask.bytes());
  const auto* y = reinterpret_cast<const uint8_t*>(b.mask.bytes());
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel; ++i) n += x[i] != y[i];
  return n;
}

std::string how_they_differ(const MaskRecord& a, const MaskRecord& b) {
  if (a.shape != b.shape) return "shape " + shape_str(b.shape) + " vs " + shape_str(a.shape);
  if (a.p != b.p) return "rate " + std::to_string(b.p) + " vs " + std::to_string(a.p);
  const int64_t n = differing(a, b);
  return n < 0 ? std::string("their digests differ")
               : std::to_string(n) + " of " + std::to_string(a.numel) + " elements differ";
}

}  // namespace

std::optional<std::string> forward_draws_differ(const RunRecord& base, const RunRecord& run, bool same_offsets) {
  std::vector<const MaskRecord*> mine, theirs;
  for (const auto& m : run.masks)
    if (!m.recompute) mine.push_back(&m);
  for (const auto& m : base.masks)
    if (!m.recompute) theirs.push_back(&m);
  if (mine.size() != theirs.size())
    return std::to_string(mine.size()) + " forward mask draws, baseline has " + std::to_string(theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    const MaskRecord& m = *mine[i];
    const MaskRecord& t = *theirs[i];
    const bool offset_differs = same_offsets && m.offset != t.offset;
    if (m.site != t.site || m.digest != t.digest || offset_differs)
      return "forward mask " + std::to_string(i) + " (" + draw_str(m) + ") differs from the baseline's (" + draw_str(t) +
             "): " +
             (m.site != t.site  ? std::string("another site")
              : offset_differs ? "drawn at offset " + std::to_string(m.offset) + ", the baseline's at " +
                                     std::to_string(t.offset)
                               : how_they_differ(t, m));
  }
  return std::nullopt;
}

CheckResult check_rng_opaque(const RunRecord& base, const RunRecord& run, const std::string& label) {
  const std::string kind = "rng";
  if (base.seed_offset_rng != run.seed_offset_rng)
    return fail(kind, label + ": the baseline and this run record different kinds of generator state "
                              "(seed-offset vs opaque)");
  if (base.rng_after_opaque.size() != run.rng_after_opaque.size())
    return fail(kind, label + ": micro-batch counts differ");
  for (size_t i = 0; i < run.rng_after_opaque.size(); ++i) {
    const auto &want = base.rng_after_opaque[i], &got = run.rng_after_opaque[i];
    for (const auto& [name, digest] : want) {
      auto it = got.find(name);
      if (it == got.end())
        return fail(kind, label + ": after " + mb_label(run, i) + " generator '" + name + "' has no recorded state");
      if (it->second != digest)
        return fail(kind, label + ": the state of generator '" + name + "' after " + mb_label(run, i) +
                              " differs from the baseline's (state sha256 " + it->second.substr(0, 16) + "..., baseline " +
                              digest.substr(0, 16) + "...)");
    }
    for (const auto& [name, digest] : got)
      if (!want.count(name))
        return fail(kind, label + ": after " + mb_label(run, i) + " generator '" + name + "' exists only in this run");
  }
  return pass(kind, label + ": generator states equal the baseline's after " + std::to_string(run.rng_after_opaque.size()) +
                        " micro-batches (opaque states: seeds per design §5 not judged)");
}

CheckResult check_masks_portable(const RunRecord& base, const RunRecord& run, const std::string& label) {
  const std::string kind = "masks";
  std::map<std::string, const MaskRecord*> last_forward;  // per site
  int recomputed = 0;
  for (const MaskRecord& m : run.masks) {
    if (run.seed_offset_rng) {
      const std::string stream = expected_stream(m.kind, run.config);
      if (m.generator != stream)
        return fail(kind, label + ": " + m.kind + " dropout " + draw_str(m) + " drew from '" + m.generator +
                              "', design §5 says '" + stream + "'");
      if (const uint64_t want = expected_stream_seed(stream, run.config.run.seed, run.coords); m.seed != want)
        return fail(kind, label + ": mask of " + draw_str(m) + " drawn with seed " + std::to_string(m.seed) +
                              ", design §5 says " + std::to_string(want));
    }
    if (!m.recompute) {
      last_forward[m.site] = &m;
      continue;
    }
    ++recomputed;
    auto it = last_forward.find(m.site);
    if (it == last_forward.end())
      return fail(kind, label + ": recompute draw of " + draw_str(m) + " comes before any forward draw of that site");
    const MaskRecord& f = *it->second;
    if (f.step != m.step || f.micro_batch != m.micro_batch)
      return fail(kind, label + ": recompute draw of " + draw_str(m) + " follows a forward draw of another micro-batch (" +
                            draw_str(f) + ")");
    if (f.shape != m.shape || f.p != m.p || f.digest != m.digest ||
        (run.seed_offset_rng && (f.seed != m.seed || f.offset != m.offset)))
      return fail(kind, label + ": recompute draw of " + draw_str(m) + " differs from its forward draw: " +
                            how_they_differ(f, m) + " (the RNG state was not restored for the recompute)");
  }
  // A generator that does not advance replays its masks: two forward draws of one site
  // in different micro-batches must differ wherever equal random masks are
  // improbable (below 1e-12 for independent draws of that size and rate).
  std::map<std::string, std::map<uint64_t, const MaskRecord*>> seen;  // site -> digest -> first draw
  for (const MaskRecord& m : run.masks) {
    if (m.recompute || m.p <= 0 || m.p >= 1) continue;
    const double agree = m.p * m.p + (1 - m.p) * (1 - m.p);  // one element agreeing by chance
    if (static_cast<double>(m.numel) * std::log(agree) > std::log(1e-12)) continue;
    auto [it, fresh] = seen[m.site].emplace(m.digest, &m);
    if (!fresh && (it->second->step != m.step || it->second->micro_batch != m.micro_batch) &&
        it->second->mask.defined() && m.mask.defined() && differing(*it->second, m) == 0)
      return fail(kind, label + ": forward draw of " + draw_str(m) + " repeats the mask of " + draw_str(*it->second) +
                            " bit for bit: the generator did not advance between them");
  }
  if (auto why = forward_draws_differ(base, run, false)) return fail(kind, label + ": " + *why);
  const auto forwards = std::count_if(run.masks.begin(), run.masks.end(), [](const MaskRecord& m) { return !m.recompute; });
  // rcts's own run with a fused attention (design §11): its attention masks are the
  // library's, drawn inside the call from the tracker's (seed, offset).
  const std::string why = run.implementation == "rcts" && run.config.model.flash_attention
                              ? "the attention masks are the fused attention's own (model.flash_attention on '" +
                                    run.backend + "'), drawn from the tracker's (seed, offset)"
                              : "no rcts mask rule declared";
  return pass(kind, label + ": " + std::to_string(forwards) + " forward draws equal the baseline's, " +
                        std::to_string(recomputed) + " recompute draws equal their forward draw (" + why +
                        ": regeneration and stream contiguity not judged)");
}

CheckResult check_offload_portable(const RunRecord& base, const RunRecord& run, const std::string& label) {
  const std::string kind = "offload";
  const size_t n = run.losses.size();
  if (run.offloaded_bytes.size() != n) return fail(kind, label + ": offloaded_bytes is not recorded per micro-batch");
  int64_t moved = 0;
  for (size_t i = 0; i < n; ++i) {
    if (run.offloaded_bytes[i] != run.reloaded_bytes[i])
      return fail(kind, label + ": " + mb_label(run, i) + " offloaded " + std::to_string(run.offloaded_bytes[i]) +
                            " bytes but reloaded " + std::to_string(run.reloaded_bytes[i]));
    moved += run.offloaded_bytes[i];
  }
  if (moved == 0)
    return fail(kind, label + ": offload is configured but no byte left the device in any of " + std::to_string(n) +
                          " micro-batches (device " +
                          (run.saved_after_forward.empty() ? std::string("bytes not recorded")
                                                           : std::to_string(run.saved_after_forward.front()) +
                                                                 " bytes held at the end of the first forward") +
                          ")");
  if (run.saved_after_forward.size() == n && base.saved_after_forward.size() == n)
    for (size_t i = 0; i < n; ++i)
      if (run.saved_after_forward[i] + run.host_resident_after_forward[i] != base.saved_after_forward[i])
        return fail(kind, label + ": at the end of forward (" + mb_label(run, i) + ") device " +
                              std::to_string(run.saved_after_forward[i]) + " + host " +
                              std::to_string(run.host_resident_after_forward[i]) + " bytes != " +
                              std::to_string(base.saved_after_forward[i]) + " held without offload");
  return pass(kind, label + ": moved " + std::to_string(moved) +
                        " bytes off the device and back (no rcts offload report: groups, margin, threshold and pool "
                        "not judged)");
}

}  // namespace rcts::harness
