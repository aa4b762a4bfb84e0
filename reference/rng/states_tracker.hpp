// Named RNG states (design §5), modelled on Megatron's
// CudaRNGStatesTracker with its pitfalls removed:
//  - add(name, seed) validates the name AND the seed before touching anything, so an
//    error mutates nothing (Megatron records the seed before checking the name);
//  - fork(name) is an RAII scope that switches the live device generator to the named
//    state and, on leaving (normally or by exception), stores the advanced state back
//    and restores the outer one. A nested fork first writes the live state back into
//    the enclosing fork's slot, so nesting fork(A) inside fork(A) or interleaving
//    names gives exactly the streams of the equivalent sequential forks;
//  - get_states() returns value snapshots, never live handles (Megatron-LM PR #5841).
//
// While a fork is active the live generator, not the slot, holds that name's current
// state; the slot catches up when the fork leaves or a nested fork enters.
// The tracker does not own the live generator: it must outlive the tracker.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "reference/rng/generator.hpp"

namespace rcts {

using RngStateMap = std::map<std::string, GeneratorState>;

class RngStatesTracker {
 public:
  // Scope returned by fork(). Not copyable or movable: it lives exactly as long as the
  // enclosing block, so scopes always close in LIFO order.
  class Fork {
   public:
    Fork(const Fork&) = delete;
    Fork& operator=(const Fork&) = delete;
    Fork(Fork&&) = delete;
    Fork& operator=(Fork&&) = delete;
    ~Fork();
    const std::string& name() const { return name_; }

   private:
    friend class RngStatesTracker;
    Fork(RngStatesTracker& tracker, const std::string& name);
    RngStatesTracker& tracker_;
    std::string name_;
    size_t depth_;            // index of this fork in tracker_.active_
    GeneratorState outside_;  // live state when entered, restored when no fork encloses us
  };

  explicit RngStatesTracker(Generator& live) : live_(&live) {}
  RngStatesTracker(const RngStatesTracker&) = delete;
  RngStatesTracker& operator=(const RngStatesTracker&) = delete;

  // New named state {seed, offset 0}. Throws (and changes nothing) if the name exists
  // or the seed was already registered; the message names both holders.
  void add(const std::string& name, uint64_t seed);

  // Enter the named state; unknown name -> Error (nothing changed).
  // Usage: { auto f = tracker.fork(kModelParallelRng); ... draw from live ... }
  [[nodiscard]] Fork fork(const std::string& name);

  RngStateMap get_states() const { return states_; }  // a copy: a value snapshot
  // Replaces the name -> state map wholesale (like Megatron). The seed registry is
  // left alone: it records which seeds add() has handed out.
  void set_states(RngStateMap states) { states_ = std::move(states); }
  // Clears states and registered seeds.
  void reset();

  bool has(const std::string& name) const { return states_.count(name) != 0; }
  // Registered seed -> the name that registered it.
  const std::map<uint64_t, std::string>& seeds() const { return seeds_; }
  // Names of the currently active forks, outermost first.
  const std::vector<std::string>& active_forks() const { return active_; }

  Generator& live() { return *live_; }
  const Generator& live() const { return *live_; }

 private:
  Generator* live_;
  RngStateMap states_;
  std::map<uint64_t, std::string> seeds_;
  std::vector<std::string> active_;
};

}  // namespace rcts
