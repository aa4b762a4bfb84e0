// Rng, RngStates and ForkRng; see rng.hpp.
#include "reference/rng/rng.hpp"

#include <utility>

namespace rcts {

std::string RngStates::to_string() const {
  std::string s = "host{" + host.to_string() + "} device{" + device.to_string() + "} tracker{";
  bool first = true;
  for (const auto& [name, st] : tracker) {
    s += (first ? "" : " ") + name + "{" + st.to_string() + "}";
    first = false;
  }
  return s + "}";
}

RngStates Rng::all_states() const {
  RngStates s{host_.state(), device_.state(), tracker_.get_states(), tracker_.active_forks()};
  const auto& active = tracker_.active_forks();
  if (!active.empty()) s.tracker[active.back()] = device_.state();
  return s;
}

std::string Rng::current_stream() const {
  const auto& active = tracker_.active_forks();
  if (!active.empty()) return active.back();
  // A recompute restores a snapshot taken inside a fork without re-entering it: the
  // live generator then holds that stream's state. Name it by its seed (the
  // data-parallel stream shares the default generator's seed and is never forked for
  // dropout, so a match on it means the default generator).
  for (const auto& [name, st] : tracker_.get_states())
    if (st.seed == device_.state().seed && name != kDataParallelRng) return name;
  return "device-default";
}

void Rng::set_all_states(const RngStates& s) {
  RngStateMap copy = s.tracker;  // the only step that can throw: copy before mutating
  host_.set_state(s.host);
  device_.set_state(s.device);
  tracker_.set_states(std::move(copy));
}

ForkRng::~ForkRng() {
  // Move the snapshot in: no allocation, so restoring cannot throw from a destructor.
  rng_.host().set_state(saved_.host);
  rng_.device().set_state(saved_.device);
  rng_.tracker().set_states(std::move(saved_.tracker));
}

}  // namespace rcts
