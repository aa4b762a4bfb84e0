// The RNG of one simulated process/device (design §5): a host default generator, a
// device default generator and a named-states
// tracker whose forks act on this Rng's device generator.
// all_states() is a value snapshot of all three parts; ForkRng snapshots them on entry
// and restores all three on exit, also when the scope is left by an exception
// (restoring only the device default is not enough: TP-region masks would go wrong).
#pragma once
#include <string>
#include <vector>

#include "reference/rng/generator.hpp"
#include "reference/rng/states_tracker.hpp"

namespace rcts {

// Names of the tracker's three streams (design §5).
inline constexpr const char* kDataParallelRng = "data-parallel-rng";
inline constexpr const char* kModelParallelRng = "model-parallel-rng";
inline constexpr const char* kExpertParallelRng = "expert-parallel-rng";

struct RngStates {
  GeneratorState host;
  GeneratorState device;
  RngStateMap tracker;
  // Tracker forks active when the snapshot was taken, outermost first. A recompute
  // re-enters them after restoring, so nested forks behave as in the forward.
  std::vector<std::string> active_forks;
  bool operator==(const RngStates&) const = default;
  // "host{seed=1 offset=0} device{seed=1 offset=3} tracker{data-parallel-rng{seed=1 offset=0}}"
  std::string to_string() const;
};

// Not copyable or movable: the tracker refers to this object's device generator.
// Hold several in a std::vector<std::unique_ptr<Rng>> or construct them in place.
class Rng {
 public:
  Rng() : tracker_(device_) {}
  Rng(const Rng&) = delete;
  Rng& operator=(const Rng&) = delete;

  Generator& host() { return host_; }
  const Generator& host() const { return host_; }
  Generator& device() { return device_; }
  const Generator& device() const { return device_; }
  RngStatesTracker& tracker() { return tracker_; }
  const RngStatesTracker& tracker() const { return tracker_; }

  // A value snapshot of all three parts. Inside a tracker fork the live generator
  // holds the innermost fork's stream, so the snapshot records that stream's slot as
  // the live state: restoring it outside the fork (a recompute in backward) then lets
  // a nested fork of the same name continue exactly where the forward's did.
  RngStates all_states() const;
  // The stream dropout draws from now: the innermost active fork, else the tracker
  // stream whose seed the live generator carries, else "device-default".
  std::string current_stream() const;
  void set_all_states(const RngStates& s);

 private:
  Generator host_;
  Generator device_;
  RngStatesTracker tracker_;
};

// Scope: snapshot all three parts now, restore them when the scope ends.
class ForkRng {
 public:
  explicit ForkRng(Rng& rng) : rng_(rng), saved_(rng.all_states()) {}
  ForkRng(const ForkRng&) = delete;
  ForkRng& operator=(const ForkRng&) = delete;
  ~ForkRng();
  const RngStates& saved() const { return saved_; }

 private:
  Rng& rng_;
  RngStates saved_;
};

}  // namespace rcts
