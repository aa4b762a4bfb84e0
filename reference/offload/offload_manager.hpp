// Fine-grained activation offload (design §9), modelled on
// Megatron-LM's fine_grained_activation_offload, plus layer-level cpu_offloading.
//
// Forward: an offloadable module runs inside a group scope (group_start pushes the
// manager's saved-tensor hooks; pack records each saved tensor of >=
// min_offloaded_tensor_size ELEMENTS in the open group, parameters never); the
// group's commit point — delayed for attn_norm (after the attention residual add),
// mlp_norm (after the MLP residual add) — copies the group's storages to pooled
// host buffers on the D2H stream and releases the device bytes only after the copy
// completed (the release is what "forced release" means here: every view of the
// storage, e.g. the residual stream, loses its bytes, which is why the commit waits
// for the residual's last forward consumer).
// Backward: at a group's commit point (reached first) the main stream waits for its
// reload event; at its start point it prefetches the next group in backward order
// on the H2D stream (after that group's D2H completed). A saved tensor used before
// its reload completed is an error naming the tensor and the group.
// The first iteration is warmup: groups are recorded, nothing moves; then, per
// group name, the group whose backward runs first stays on device (the margin) and
// decisions are fixed. Recomputes never offload (their saves are consumed at once).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reference/backend/backend.hpp"
#include "reference/config/config.hpp"
#include "reference/core/memory_timeline.hpp"
#include "reference/core/saved_tensor_hooks.hpp"
#include "reference/offload/host_pool.hpp"

namespace rcts {

struct OffloadedTensor {
  std::string group;  // e.g. "core_attn@3"
  std::string tensor; // save record key
  int64_t numel = 0;
  bool offloaded = false;
  std::string kept_because;  // "threshold", "margin", "recomputed", "parameter"
  uint64_t storage = 0;      // the view's storage (one host copy per storage and group)
  int64_t storage_bytes = 0;
  std::string storage_name;  // its producer's name, e.g. "layers.0.input_layernorm.output"
};

struct OffloadGroupStats {
  int64_t offloaded_bytes = 0, reloaded_bytes = 0, kept_bytes = 0;
  int groups = 0, margin_groups = 0;
};

struct OffloadReport {
  std::map<std::string, OffloadGroupStats> by_name;
  std::map<std::string, OffloadGroupStats> by_group;  // "name@layer" after warmup (kept_bytes unused)
  std::vector<OffloadedTensor> tensors;           // every save the manager saw after warmup
  std::vector<std::string> margin_groups;         // e.g. "attn_norm@4"
  std::vector<int64_t> host_pool_allocations;     // cumulative, after each iteration
  double exposed_wait_s = 0;
  int iterations = 0;
};

class OffloadManager final : public SavedTensorHooks {
 public:
  // Copy streams and pinned host buffers come from `backend`.
  OffloadManager(MemoryTracker& tracker, const Config& config, Backend& backend);
  ~OffloadManager() override;

  // True when `name` is offloaded for `layer` in this configuration.
  bool handles(const std::string& name, int layer) const;

  class GroupScope {
   public:
    GroupScope(OffloadManager* m, const std::string& name, int layer);
    ~GroupScope();
    GroupScope(const GroupScope&) = delete;
    GroupScope& operator=(const GroupScope&) = delete;

   private:
    OffloadManager* m_;
    std::optional<SavedTensorHooksScope> hooks_;
  };

  // Forward call points.
  void commit(const std::string& name, int layer);
  // Backward call points.
  void backward_commit(const std::string& name, int layer);
  void backward_start(const std::string& name, int layer);
  // A recompute that reads a group's saved tensors before the group's backward commit
  // point (MLA's up-projection recompute reads the qkv_linear group's inputs when the
  // core attention's output gradient arrives): reload it now and wait. Megatron-LM's
  // unpack reloads such a tensor inline, without waiting for its D2H copy (#7398);
  // here the reload waits for the group's offload event first, as a prefetch does.
  void reload_on_demand(const std::string& name, int layer);
  // End of one forward+backward (a micro-batch).
  void end_iteration();

  PackedTensor pack(const Tensor& t, const SaveInfo& info) override;
  Tensor unpack(PackedTensor& p) override;

  const OffloadReport& report() const { return report_; }
  // Host residency and copy intervals go to `t` too (the run report); observes only.
  void set_timeline(MemoryTimeline* t) { timeline_ = t; }
  // Bytes of this iteration's groups that sit on the host now (offloaded, not reloaded).
  int64_t resident_bytes() const { return resident_; }

 private:
  struct StorageCopy {
    std::shared_ptr<Storage> storage;
    Tensor host;
    std::shared_ptr<Event> d2h, h2d;
    bool offloaded = false;
  };
  struct View {
    Tensor tensor;
    size_t storage;  // index into Group::storages
  };
  struct Group {
    std::string name;
    int layer = 0;
    std::vector<StorageCopy> storages;
    std::vector<View> views;
    std::map<std::string, size_t> view_index;  // dedup key -> view
    bool committed = false, offloaded = false, reload_issued = false, reloaded = false;
  };
  struct Tag {
    size_t group, view;
  };
  static std::string key(const std::string& name, int layer) { return name + "@" + std::to_string(layer); }
  Group* find(const std::string& name, int layer);
  void issue_reload(Group& g);

  const Config& config_;
  HostPool pool_;
  std::unique_ptr<CopyStream> d2h_, h2d_;
  std::vector<Group> groups_;           // this iteration, in group-start order
  std::vector<size_t> commit_order_;    // indices into groups_, forward commit order
  std::optional<size_t> open_;          // group receiving packs
  std::map<std::string, bool> margin_;  // "name@layer" -> kept on device
  bool warmup_ = true;
  std::map<std::string, int> inflight_;
  std::map<std::string, std::vector<std::shared_ptr<Event>>> inflight_events_;
  OffloadReport report_;
  int64_t resident_ = 0;
  MemoryTimeline* timeline_ = nullptr;
};

}  // namespace rcts
