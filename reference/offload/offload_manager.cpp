#include "reference/offload/offload_manager.hpp"

#include <algorithm>

#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts {

namespace {
LinkModel link_of(const OffloadConfig& o) {
  return {o.link_bandwidth_gbps * 1e9, o.link_latency_us * 1e-6};
}
bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

OffloadManager::OffloadManager(MemoryTracker& tracker, const Config& config, Backend& backend)
    : config_(config),
      pool_(tracker, backend.memory()),
      d2h_(backend.make_copy_stream("d2h", link_of(config.offload))),
      h2d_(backend.make_copy_stream("h2d", link_of(config.offload))) {}

OffloadManager::~OffloadManager() = default;

bool OffloadManager::handles(const std::string& name, int layer) const {
  const auto& o = config_.offload;
  if (name == "layer") return o.cpu_offloading && layer < o.cpu_offloading_num_layers;
  return o.fine_grained_activation_offloading && contains(o.offload_modules, name);
}

OffloadManager::GroupScope::GroupScope(OffloadManager* m, const std::string& name, int layer) : m_(nullptr) {
  // No group inside a recompute (its saves are consumed at once) or a no-grad pass.
  if (!m || !m->handles(name, layer) || is_recomputing() || is_checkpointing() || !m->config_.run.training) return;
  m_ = m;
  RCTS_CHECK(!m->find(name, layer), "offload group " + key(name, layer) + " started twice in one iteration");
  m->groups_.push_back(Group{name, layer, {}, {}, {}, false, false, false, false});
  m->open_ = m->groups_.size() - 1;
  hooks_.emplace(*m);
}

OffloadManager::GroupScope::~GroupScope() {
  if (m_) m_->open_.reset();
}

OffloadManager::Group* OffloadManager::find(const std::string& name, int layer) {
  for (auto& g : groups_)
    if (g.name == name && g.layer == layer) return &g;
  return nullptr;
}

PackedTensor OffloadManager::pack(const Tensor& t, const SaveInfo& info) {
  PackedTensor p;
  p.tensor = t;
  if (!open_) return p;
  Group& g = groups_[*open_];
  const std::string where = key(g.name, g.layer);
  const std::string tname = info.module_path + "." + info.tensor;
  // Parameters never move; small tensors stay (the threshold counts ELEMENTS).
  const int64_t size = fault_on(Fault::offload_threshold_bytes) ? t.nbytes() : t.numel();
  std::string kept;
  if (t.storage()->category() == Category::param) kept = "parameter";
  else if (t.storage()->recomputed_by_checkpoint()) kept = "recomputed";
  else if (size < config_.offload.min_offloaded_tensor_size) kept = "threshold";
  if (!kept.empty()) {
    if (!warmup_)
      report_.tensors.push_back(
          {where, tname, t.numel(), false, kept, t.storage()->id(), t.storage()->nbytes(), t.storage()->name()});
    report_.by_name[g.name].kept_bytes += warmup_ ? 0 : t.nbytes();
    return p;
  }
  // One host copy per storage; one entry per distinct view (storage, offset, shape).
  const std::string dedup = fault_on(Fault::offload_dedup_by_storage)
                                ? std::to_string(t.storage()->id())
                                : std::to_string(t.storage()->id()) + ":" + std::to_string(t.offset()) + ":" +
                                      shape_str(t.shape());
  auto it = g.view_index.find(dedup);
  size_t view;
  if (it != g.view_index.end()) {
    view = it->second;
  } else {
    size_t s = 0;
    while (s < g.storages.size() && g.storages[s].storage != t.storage()) ++s;
    if (s == g.storages.size()) g.storages.push_back({t.storage(), {}, {}, {}, false});
    g.views.push_back({t, s});
    view = g.views.size() - 1;
    g.view_index[dedup] = view;
    if (!warmup_)
      report_.tensors.push_back(
          {where, tname, t.numel(), true, "", t.storage()->id(), t.storage()->nbytes(), t.storage()->name()});
  }
  p.tag = Tag{*open_, view};
  return p;
}

Tensor OffloadManager::unpack(PackedTensor& p) {
  if (!p.tag.has_value()) return p.tensor;  // kept on device at pack time
  const Tag tag = std::any_cast<Tag>(p.tag);
  Group& g = groups_.at(tag.group);
  const View& v = g.views.at(tag.view);
  if (g.offloaded) {
    const StorageCopy& sc = g.storages[v.storage];
    if (!sc.h2d || !sc.h2d->done())
      throw Error("offload: saved tensor '" + p.info.module_path + "." + p.info.tensor + "' of group " +
                  key(g.name, g.layer) + " used before its reload completed");
  }
  return v.tensor;
}

void OffloadManager::commit(const std::string& name, int layer) {
  Group* g = find(name, layer);
  if (!g) return;  // not handled, or no group this pass (recompute, no-grad)
  g->committed = true;
  commit_order_.push_back(static_cast<size_t>(g - groups_.data()));
  const std::string k = key(name, layer);
  auto& stats = report_.by_name[name];
  if (warmup_) return;
  auto& group_stats = report_.by_group[k];
  ++stats.groups;
  ++group_stats.groups;
  const bool margin = margin_.count(k) && !fault_on(Fault::offload_no_margin) && name != "layer";
  if (margin) {
    ++stats.margin_groups;
    ++group_stats.margin_groups;
    for (const auto& sc : g->storages) stats.kept_bytes += sc.storage->released() ? 0 : sc.storage->nbytes();
    for (auto& t : report_.tensors)
      if (t.group == k && t.offloaded) {
        t.offloaded = false;
        t.kept_because = "margin";
      }
    return;
  }
  g->offloaded = true;
  const bool strict = link_of(config_.offload).strict();
  for (auto& sc : g->storages) {
    if (sc.storage->released()) {
      // An output-discarding checkpoint already dropped it; its recompute rebuilds it.
      sc.offloaded = false;
      continue;
    }
    sc.offloaded = true;
    const int64_t bytes = sc.storage->nbytes();
    stats.offloaded_bytes += bytes;
    group_stats.offloaded_bytes += bytes;
    resident_ += bytes;
    sc.host = pool_.acquire({bytes}, DType::u8, sc.storage->name() + ".host");
    auto storage = sc.storage;
    Tensor host = sc.host;
    if (fault_on(Fault::free_before_d2h)) storage->release();  // mutant: the copy then reads freed bytes
    MemoryTimeline* tl = timeline_;
    sc.d2h = d2h_->enqueue(
        [storage, host, tl, bytes]() mutable {
          const double t0 = tl ? tl->now_us() : 0;
          copy_bytes(host.bytes(), *host.storage(), storage->data(storage->name() + " (D2H copy)"), *storage,
                     storage->nbytes());
          if (tl) tl->host_delta(bytes);
          storage->release();  // device bytes go only once the copy is done
          if (tl) tl->copy({"d2h", storage->name(), bytes, t0, tl->now_us()});
        },
        bytes);
    if (strict) {
      d2h_->wait(sc.d2h);  // exact byte accounting: the device bytes are gone at the commit point
    } else if (int cap = config_.offload.max_inflight_offloads; cap > 0) {
      auto& q = inflight_events_[name];
      q.push_back(sc.d2h);
      while (static_cast<int>(q.size()) > cap) {
        d2h_->wait(q.front());
        q.erase(q.begin());
      }
    }
  }
}

void OffloadManager::issue_reload(Group& g) {
  g.reload_issued = true;
  for (auto& sc : g.storages) {
    if (!sc.offloaded) continue;
    d2h_->wait(sc.d2h);  // the H2D stream waits for the group's offload event first
    auto storage = sc.storage;
    Tensor host = sc.host;
    HostPool* pool = &pool_;
    report_.by_name[g.name].reloaded_bytes += storage->nbytes();
    report_.by_group[key(g.name, g.layer)].reloaded_bytes += storage->nbytes();
    MemoryTimeline* tl = timeline_;
    sc.h2d = h2d_->enqueue(
        [storage, host, tl]() {
          const double t0 = tl ? tl->now_us() : 0;
          auto donor = Storage::allocate(storage->tracker(), storage->memory(), storage->domain(), storage->category(),
                                         storage->nbytes(), storage->name() + ".reloaded", /*zero=*/false);
          copy_bytes(donor->data(storage->name()), *donor, host.bytes(), *host.storage(), storage->nbytes());
          storage->adopt(*donor);
          if (tl) {
            tl->host_delta(-storage->nbytes());
            tl->copy({"h2d", storage->name(), storage->nbytes(), t0, tl->now_us()});
          }
        },
        storage->nbytes());
    (void)pool;
  }
}

void OffloadManager::backward_start(const std::string& name, int layer) {
  if (!find(name, layer) || warmup_) return;
  // Prefetch the next offloaded group in backward order (reverse commit order).
  std::vector<size_t> pending;
  for (auto it = commit_order_.rbegin(); it != commit_order_.rend(); ++it)
    if (groups_[*it].offloaded && !groups_[*it].reload_issued) pending.push_back(*it);
  if (pending.empty()) return;
  size_t next = pending.front();
  if (fault_on(Fault::offload_wrong_group)) {
    // Mutant: the layer number is used as a position among the pending groups.
    next = pending[std::min(static_cast<size_t>(layer), pending.size() - 1)];
  }
  issue_reload(groups_[next]);
}

void OffloadManager::reload_on_demand(const std::string& name, int layer) {
  Group* g = find(name, layer);
  if (!g || !g->offloaded) return;
  if (!g->reload_issued) issue_reload(*g);
  for (auto& sc : g->storages)
    if (sc.offloaded) h2d_->wait(sc.h2d);
}

void OffloadManager::backward_commit(const std::string& name, int layer) {
  Group* g = find(name, layer);
  if (!g || !g->offloaded) return;
  if (!g->reload_issued) {
    // Only the groups before the first prefetch may be reloaded on demand; any other
    // miss means a prefetch fetched the wrong group.
    for (size_t idx : commit_order_) {
      const Group& o = groups_[idx];
      if (&o != g && o.offloaded && o.reload_issued && !o.reloaded)
        throw Error("offload: group " + key(name, layer) + " reached its backward commit point unfetched while " +
                    key(o.name, o.layer) + " was prefetched out of order");
    }
    issue_reload(*g);
  }
  if (!fault_on(Fault::reload_without_wait))
    for (auto& sc : g->storages)
      if (sc.offloaded) h2d_->wait(sc.h2d);
  for (auto& sc : g->storages)
    if (sc.offloaded) resident_ -= sc.storage->nbytes();
  g->reloaded = true;
}

void OffloadManager::end_iteration() {
  if (groups_.empty()) return;  // eval or a pass without offloadable modules
  // Every reload must have finished before the buffers go back to the pool.
  for (auto& g : groups_)
    for (auto& sc : g.storages) {
      if (sc.h2d) h2d_->wait(sc.h2d);
      if (sc.offloaded) pool_.release(sc.host);
    }
  if (warmup_) {
    // The margin: per name, the group committed last (its backward runs first).
    std::map<std::string, std::string> last;
    for (size_t idx : commit_order_) last[groups_[idx].name] = key(groups_[idx].name, groups_[idx].layer);
    for (const auto& [name, k] : last) {
      margin_[k] = true;
      report_.margin_groups.push_back(k);
    }
    warmup_ = false;
  }
  groups_.clear();
  commit_order_.clear();
  resident_ = 0;
  inflight_events_.clear();
  ++report_.iterations;
  report_.host_pool_allocations.push_back(pool_.allocations());
  report_.exposed_wait_s = d2h_->exposed_wait_seconds() + h2d_->exposed_wait_seconds();
}

}  // namespace rcts
