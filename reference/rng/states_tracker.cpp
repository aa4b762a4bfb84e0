// RngStatesTracker: see states_tracker.hpp for the promises.
#include "reference/rng/states_tracker.hpp"

#include <cstdio>
#include <cstdlib>

#include "reference/core/error.hpp"
#include "reference/core/faults.hpp"

namespace rcts {

void RngStatesTracker::add(const std::string& name, uint64_t seed) {
  // Check everything first, report every conflict, then mutate.
  std::string problems;
  if (auto it = states_.find(name); it != states_.end())
    problems += "state '" + name + "' already exists (" + it->second.to_string() + ")";
  if (auto it = seeds_.find(seed); it != seeds_.end()) {
    if (!problems.empty()) problems += "; ";
    problems += "seed " + std::to_string(seed) + " already exists, held by '" + it->second + "'";
  }
  RCTS_CHECK(problems.empty(), "RngStatesTracker::add('" + name + "', seed " + std::to_string(seed) +
                                   "): " + problems + "; nothing was changed");
  // Insert the seed first and roll it back if the second insert throws (bad_alloc).
  auto [sit, inserted] = seeds_.emplace(seed, name);
  try {
    states_.emplace(name, GeneratorState{seed, 0});
  } catch (...) {
    if (inserted) seeds_.erase(sit);
    throw;
  }
}

void RngStatesTracker::reset() {
  states_.clear();
  seeds_.clear();
}

RngStatesTracker::Fork RngStatesTracker::fork(const std::string& name) { return Fork(*this, name); }

RngStatesTracker::Fork::Fork(RngStatesTracker& tracker, const std::string& name)
    : tracker_(tracker), name_(name), depth_(tracker.active_.size()) {
  auto it = tracker_.states_.find(name);
  if (it == tracker_.states_.end()) {
    std::string known;
    for (const auto& [n, s] : tracker_.states_) known += (known.empty() ? "" : ", ") + n;
    throw Error("RngStatesTracker::fork: unknown state '" + name + "' (known: " +
                (known.empty() ? "none" : known) + ")");
  }
  tracker_.active_.push_back(name);  // the only step that can throw; nothing else changed yet
  Generator& live = *tracker_.live_;
  // Nested: the live generator holds the enclosing fork's current state. Put it back
  // into its slot first, so a fork of the same name continues from there instead of
  // replaying the stale slot.
  if (depth_ > 0) {
    auto outer = tracker_.states_.find(tracker_.active_[depth_ - 1]);
    if (outer != tracker_.states_.end()) outer->second = live.state();
  }
  outside_ = live.state();
  live.set_state(it->second);
}

RngStatesTracker::Fork::~Fork() {
  auto& active = tracker_.active_;
  if (active.size() != depth_ + 1) {
    // Cannot happen with scoped use (Fork is not movable); a destructor must not throw.
    std::fprintf(stderr, "rcts: RngStatesTracker fork '%s' closed out of order (depth %zu, %zu active)\n",
                 name_.c_str(), depth_, active.size());
    std::abort();
  }
  Generator& live = *tracker_.live_;
  // Store the advanced state. If reset()/set_states() removed the slot meanwhile, the
  // state is dropped: re-inserting could allocate, and the name is gone on purpose.
  if (auto it = tracker_.states_.find(name_); it != tracker_.states_.end() && !fault_on(Fault::fork_no_write_back))
    it->second = live.state();
  active.pop_back();
  // Back to the enclosing fork's (possibly just updated) slot, else to the state the
  // live generator had before this fork.
  if (depth_ > 0) {
    if (auto outer = tracker_.states_.find(active[depth_ - 1]); outer != tracker_.states_.end()) {
      live.set_state(outer->second);
      return;
    }
  }
  live.set_state(outside_);
}

}  // namespace rcts
