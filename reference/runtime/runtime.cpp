#include "reference/runtime/runtime.hpp"

#include "reference/core/faults.hpp"
#include "reference/runtime/reduce.hpp"
#include "reference/runtime/fp8.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts {

Runtime::Runtime(Config c, Backend& b) : config(std::move(c)), backend(b) {
  if (config.offload.fine_grained_activation_offloading || config.offload.cpu_offloading)
    offload = std::make_unique<OffloadManager>(memory, config, backend);
  if (config.model.fp8) fp8 = std::make_unique<Fp8DelayedScaling>(config.model);
  if (const int64_t n = backend.op_workspace_bytes(); n > 0) {
    op_workspace = Storage::allocate(&memory, backend.memory(), Domain::device, Category::workspace, n,
                                     backend.name() + " op workspace", /*zero=*/false);
    backend.bind_op_workspace(op_workspace->data(op_workspace->name()), n);
  }
}

Runtime::~Runtime() {
  if (op_workspace) backend.bind_op_workspace(nullptr, 0);
}

void Counters::count_forward(const std::string& module_path) {
  auto& c = forwards_[module_path];
  if (is_recomputing()) ++c.recompute;
  else ++c.original;
}

ForwardCount Counters::get(const std::string& module_path) const {
  auto it = forwards_.find(module_path);
  return it == forwards_.end() ? ForwardCount{} : it->second;
}

void Runtime::add_side_effect(const std::string& key, double value) {
  // A recompute replays the forward; its side effects were already applied.
  if (is_recomputing() && !fault_on(Fault::side_effect_twice)) return;
  side_effects[key] += value;
}

template <typename T> void Runtime::all_reduce_sum(Communicator& group, T* data, int64_t n) {
  rcts::all_reduce_sum(group, backend, data, n);
}
template <typename T> void Runtime::reduce_scatter_sum(Communicator& group, const T* in, T* out, int64_t n_per_rank) {
  rcts::reduce_scatter_sum(group, backend, in, out, n_per_rank);
}
template void Runtime::all_reduce_sum<float>(Communicator&, float*, int64_t);
template void Runtime::all_reduce_sum<double>(Communicator&, double*, int64_t);
template void Runtime::reduce_scatter_sum<float>(Communicator&, const float*, float*, int64_t);
template void Runtime::reduce_scatter_sum<double>(Communicator&, const double*, double*, int64_t);

uint64_t fnv1a64(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace rcts
