// The stream rule of a run's mask log; see mask_oracle.hpp.
#include "harness/checks/mask_oracle.hpp"

#include <map>
#include <tuple>

#include "oracle/philox_masks.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::harness::mask_oracle {

using oracle::philox_masks::blocks_for;

namespace {
std::string draw_str(const MaskRecord& m) {
  return m.site + " (micro-batch " + std::to_string(m.micro_batch) + ")";
}
}  // namespace

std::optional<std::string> check_mask_streams(const RunRecord& run) {
  struct Stream {
    std::string name;
    uint64_t next = 0;               // first block not yet drawn
    const MaskRecord* last = nullptr;  // its latest forward draw
  };
  std::map<uint64_t, Stream> by_seed;
  // Per (site, step, micro-batch): under a pipeline schedule a stage holds several
  // micro-batches, so a recompute replays its own micro-batch's forward (design §16).
  using Key = std::tuple<std::string, int, int>;
  std::map<Key, const MaskRecord*> last_forward;
  for (const MaskRecord& m : run.masks) {
    if (m.recompute) {
      auto it = last_forward.find(Key{m.site, m.step, m.micro_batch});
      if (it == last_forward.end())
        return "recompute draw of " + draw_str(m) + " (seed " + std::to_string(m.seed) + " block " +
               std::to_string(m.offset) + ") comes before any forward draw of that site in its step and micro-batch";
      const MaskRecord& f = *it->second;
      if (f.micro_batch != m.micro_batch || f.seed != m.seed || f.offset != m.offset || f.numel != m.numel ||
          f.p != m.p || f.digest != m.digest)
        return "recompute draw of " + draw_str(m) + " used seed " + std::to_string(m.seed) + " blocks [" +
               std::to_string(m.offset) + ", " + std::to_string(m.offset + blocks_for(m.numel)) +
               "), but the forward draw it replays (micro-batch " + std::to_string(f.micro_batch) + ") used seed " +
               std::to_string(f.seed) + " blocks [" + std::to_string(f.offset) + ", " +
               std::to_string(f.offset + blocks_for(f.numel)) + ")" +
               (f.digest != m.digest ? " and its mask differs" : "");
      continue;
    }
    Stream& s = by_seed.try_emplace(m.seed, Stream{m.generator}).first->second;
    if (s.name != m.generator)
      return "streams '" + s.name + "' and '" + m.generator + "' share seed " + std::to_string(m.seed) +
             ": their Philox blocks overlap (" + draw_str(m) + ")";
    if (m.offset != s.next) {
      const std::string before = s.last ? "the stream's previous draw, " + draw_str(*s.last) + ", ended at block " +
                                              std::to_string(s.next)
                                        : "the stream starts at block 0 after seeding";
      const std::string what = m.offset < s.next ? "blocks [" + std::to_string(m.offset) + ", " +
                                                       std::to_string(std::min(s.next, m.offset + blocks_for(m.numel))) +
                                                       ") are drawn again (a fork that did not store its state "
                                                       "back, or a state restored between draws?)"
                                                 : "blocks [" + std::to_string(s.next) + ", " +
                                                       std::to_string(m.offset) + ") were consumed by no logged draw";
      return "forward draw of " + draw_str(m) + " from '" + m.generator + "' (seed " + std::to_string(m.seed) +
             ") starts at block " + std::to_string(m.offset) + ", but " + before + ": " + what;
    }
    s.next = m.offset + blocks_for(m.numel);
    s.last = &m;
    last_forward[Key{m.site, m.step, m.micro_batch}] = &m;
  }
  if (run.rng_after.empty()) return std::nullopt;
  // The generators themselves must agree with the log: nothing consumed a stream
  // without a logged draw, and every fork stored its state back.
  std::map<std::string, uint64_t> end_by_name;
  for (const auto& [seed, s] : by_seed) end_by_name[s.name] = s.next;
  auto end_of = [&](const std::string& name) {
    auto it = end_by_name.find(name);
    return it == end_by_name.end() ? uint64_t{0} : it->second;
  };
  const RngStates& last = run.rng_after.back();
  auto mismatch = [&](const std::string& name, const GeneratorState& st) -> std::optional<std::string> {
    if (st.offset == end_of(name)) return std::nullopt;
    return "after the last micro-batch '" + name + "' stands at " + st.to_string() + ", but its logged draws end at block " +
           std::to_string(end_of(name));
  };
  if (auto bad = mismatch("device-default", last.device)) return bad;
  for (const auto& [name, st] : last.tracker)
    if (auto bad = mismatch(name, st)) return bad;
  return std::nullopt;
}

}  // namespace rcts::harness::mask_oracle
