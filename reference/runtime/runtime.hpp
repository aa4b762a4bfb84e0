// Runtime: what a simulated rank runs with — its backend (ops, memory, streams), memory
// tracker, op workspace, RNG (host, device default, tracker), module counters, the
// dropout-mask log and its process groups. Modules hold a reference to it; one Runtime
// per run (and per rank). Modules reach numbers only through rt.ops<T>() and the
// helpers below (docs/design.md §11).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "reference/backend/backend.hpp"
#include "reference/config/config.hpp"
#include "reference/core/save_context.hpp"
#include "reference/core/tensor.hpp"
#include "reference/core/workspace.hpp"
#include "reference/offload/offload_manager.hpp"
#include "reference/parallel/communicator.hpp"
#include "reference/rng/rng.hpp"

namespace rcts {

class Fp8DelayedScaling;

// Forward invocations per module instance, split into original and recompute.
struct ForwardCount {
  int64_t original = 0;
  int64_t recompute = 0;
  bool operator==(const ForwardCount&) const = default;
};

class Counters {
 public:
  void count_forward(const std::string& module_path);  // reads is_recomputing()
  const std::map<std::string, ForwardCount>& forwards() const { return forwards_; }
  ForwardCount get(const std::string& module_path) const;
  void clear() { forwards_.clear(); }

 private:
  std::map<std::string, ForwardCount> forwards_;
};

// One dropout draw: which generator, where in its stream, and a digest of the mask.
struct MaskRecord {
  std::string site;        // e.g. "layers.0.attention.dropout"
  std::string kind;        // "attention", "hidden" or "expert"
  std::string generator;   // the stream in effect: "device-default" or a tracker name
  uint64_t seed = 0;
  uint64_t offset = 0;     // first Philox block
  int64_t numel = 0;
  double p = 0;
  uint64_t digest = 0;     // FNV-1a 64 over the mask bytes
  int micro_batch = 0;
  bool recompute = false;
  int step = 0;
  Shape shape;             // the masked tensor's shape (the mask's layout)
  Tensor mask;             // the mask itself (host, 1 keep / 0 drop) when Runtime::keep_masks
};

struct Runtime {
  Config config;
  Backend& backend;
  MemoryTracker memory;
  // Op-internal scratch, pooled across ops and accounted as device `workspace`.
  Workspace workspace{&memory, Domain::device, backend.memory()};
  Rng rng;
  Counters counters;
  SaveLog save_log;
  std::vector<MaskRecord> masks;
  // Side effects of forward passes that must happen once per micro-batch even when
  // the region is recomputed (the dense stand-in for MoE's aux loss, Megatron #1330).
  std::map<std::string, double> side_effects;
  void add_side_effect(const std::string& key, double value);
  int micro_batch = 0;  // current micro-batch (for mask records)
  int step = 0;         // current step (for mask records)
  int pp_rank = 0;      // pipeline stage of this rank: which layers its block holds (design §16)
  bool keep_masks = false;  // keep every mask's bytes in its record (dumps)
  SingleCommunicator single{&backend.memory()};
  // Process groups of this rank (design §8); the world of one by default.
  Communicator* tp_group = &single;
  Communicator* dp_group = &single;
  Communicator* ep_group = &single;
  Communicator* etp_group = &single;
  Communicator* edp_group = &single;

  // FP8 delayed scaling of the linear layers' inputs (runtime/fp8.hpp); null without FP8.
  std::unique_ptr<Fp8DelayedScaling> fp8;
  // Activation offload (fine-grained or layer-level); null when off.
  std::unique_ptr<OffloadManager> offload;
  // The backend's fixed op scratch (Backend::op_workspace_bytes), accounted as workspace.
  std::shared_ptr<Storage> op_workspace;

  Runtime(Config c, Backend& b);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  template <typename T> Ops<T>& ops() { return backend.ops<T>(); }

  DType act_dtype() const { return config.model.activation_dtype; }
  DType param_dtype() const { return config.param_dtype(); }
  bool training() const { return config.run.training; }
  Placement place(Category c = Category::activation) { return {&memory, Domain::device, c, &backend.memory()}; }
  // A new activation tensor (op output) in the activation dtype on the device domain.
  // Not zero-filled: every op writes its whole output (the determinism tests and
  // goldens would see any read of stale bytes).
  Tensor activation(const Shape& shape, std::string name) {
    return Tensor::uninitialized(shape, act_dtype(), place(), std::move(name));
  }
  // `t` itself when the host can read it, else a host copy (for host-side bookkeeping:
  // the MoE dispatch plan reads top-k indices, the mask log digests masks).
  Tensor host_readable(const Tensor& t) const { return t.host_accessible() ? t : t.clone(host_placement()); }

  // Sums over a process group in rank order on this runtime's backend (reduce.hpp).
  template <typename T> void all_reduce_sum(Communicator& group, T* data, int64_t n);
  template <typename T> void reduce_scatter_sum(Communicator& group, const T* in, T* out, int64_t n_per_rank);
};

uint64_t fnv1a64(const void* data, size_t n);

// Offload call points (no-ops when offload is off or does not handle the module).
inline OffloadManager::GroupScope offload_group(Runtime& rt, const std::string& name, int layer) {
  return OffloadManager::GroupScope(rt.offload.get(), name, layer);
}
inline void offload_commit(Runtime& rt, const std::string& name, int layer) {
  if (rt.offload) rt.offload->commit(name, layer);
}
inline void offload_backward_commit(Runtime& rt, const std::string& name, int layer) {
  if (rt.offload) rt.offload->backward_commit(name, layer);
}
inline void offload_backward_start(Runtime& rt, const std::string& name, int layer) {
  if (rt.offload) rt.offload->backward_start(name, layer);
}
inline void offload_reload_on_demand(Runtime& rt, const std::string& name, int layer) {
  if (rt.offload) rt.offload->reload_on_demand(name, layer);
}

}  // namespace rcts
