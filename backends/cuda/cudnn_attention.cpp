#include "backends/cuda/cudnn_attention.hpp"

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_support.hpp"
#include "backends/cuda/sdpa_limits.hpp"
#include "reference/core/error.hpp"

namespace rcts::cuda {
namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kSeed, kOffset, kDO, kDQ, kDK, kDV };
constexpr int64_t kSlotBytes = 256;  // (seed, offset) as two int64, aligned for cuDNN

std::vector<int64_t> contiguous(const std::vector<int64_t>& dim) {
  std::vector<int64_t> stride(dim.size(), 1);
  for (size_t i = dim.size() - 1; i > 0; --i) stride[i - 1] = stride[i] * dim[i];
  return stride;
}

// (b, a, s, dv) viewed in token layout (s, b, a·dv): the projection's input.
std::vector<int64_t> token_strides(const FusedAttentionShape& sh) { return {sh.a * sh.dv, sh.dv, sh.b * sh.a * sh.dv, 1}; }

void ok(fe::error_t e, const std::string& what) {
  if (!e.is_good()) throw Error("cuDNN SDPA " + what + ": " + e.get_message());
}

// Graph key: forward or backward, the shape, the rate and the scale.
using Key = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, double, double>;

class Attention final : public CudnnAttention {
 public:
  explicit Attention(cudaStream_t stream) : stream_(stream) {
    const cudnnStatus_t st = cudnnCreate(&handle_);
    if (st != CUDNN_STATUS_SUCCESS)
      throw Error(std::string("cudnnCreate: ") + cudnnGetErrorString(st) + " (cuDNN " +
                  std::to_string(cudnnGetVersion()) + ")");
    cudnnSetStream(handle_, stream_);
  }
  ~Attention() override { cudnnDestroy(handle_); }

  std::string refusal(DType dtype, const FusedAttentionShape& shape, double p) const override {
    return sdpa_refusal(dtype, shape, p);
  }
  std::string describe() const override {
    return "cuDNN " + std::to_string(cudnnGetVersion()) + ", frontend " + std::to_string(CUDNN_FRONTEND_VERSION);
  }
  void bind_workspace(std::byte* p, int64_t bytes) override {
    workspace_ = p;
    workspace_bytes_ = bytes;
  }

  void forward(void* out, float* stats, const void* q, const void* k, const void* v, DType dtype,
               const FusedAttentionShape& sh, double scale, double p, uint64_t seed, uint64_t offset) override {
    require(dtype, sh, p);
    fe::graph::Graph& g = graph(true, sh, scale, p);
    std::unordered_map<int64_t, void*> pack{{kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)},
                                            {kV, const_cast<void*>(v)}, {kO, out}, {kStats, stats}};
    run(g, pack, p, seed, offset, "forward");
  }

  void backward(void* dq, void* dk, void* dv, const void* dout, const void* q, const void* k, const void* v,
                const void* out, const float* stats, DType dtype, const FusedAttentionShape& sh, double scale,
                double p, uint64_t seed, uint64_t offset) override {
    require(dtype, sh, p);
    fe::graph::Graph& g = graph(false, sh, scale, p);
    std::unordered_map<int64_t, void*> pack{
        {kQ, const_cast<void*>(q)},       {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)},
        {kO, const_cast<void*>(out)},     {kDO, const_cast<void*>(dout)},
        {kStats, const_cast<float*>(stats)}, {kDQ, dq}, {kDK, dk}, {kDV, dv}};
    run(g, pack, p, seed, offset, "backward");
  }

 private:
  void require(DType dtype, const FusedAttentionShape& sh, double p) const {
    if (const std::string why = sdpa_refusal(dtype, sh, p); !why.empty()) throw Error("cuDNN SDPA: " + why);
    RCTS_CHECK(workspace_ && workspace_bytes_ >= kSlotBytes, "cuDNN SDPA: no op workspace bound");
  }

  fe::graph::Graph& graph(bool fwd, const FusedAttentionShape& sh, double scale, double p) {
    const Key key{fwd, sh.b, sh.a, sh.s, sh.d, sh.dv, scale, p};
    if (auto it = graphs_.find(key); it != graphs_.end()) return *it->second;
    auto g = std::make_unique<fe::graph::Graph>();
    g->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto tensor = [&](const char* name, int64_t uid, std::vector<int64_t> dim) {
      return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dim).set_stride(
          contiguous(dim)));
    };
    const std::vector<int64_t> qd{sh.b, sh.a, sh.s, sh.d}, vd{sh.b, sh.a, sh.s, sh.dv}, sd{sh.b, sh.a, sh.s, 1};
    auto Q = tensor("Q", kQ, qd), K = tensor("K", kK, qd), V = tensor("V", kV, vd);
    std::shared_ptr<fe::graph::Tensor_attributes> seed, offset;
    if (p > 0) {
      seed = tensor("Seed", kSeed, {1, 1, 1, 1});
      seed->set_data_type(fe::DataType_t::INT64);
      offset = tensor("Offset", kOffset, {1, 1, 1, 1});
      offset->set_data_type(fe::DataType_t::INT64);
    }
    if (fwd) {
      auto opts = fe::graph::SDPA_attributes()
                      .set_name("rcts_core_attention")
                      .set_generate_stats(true)
                      .set_causal_mask(true)
                      .set_attn_scale(static_cast<float>(scale));
      if (p > 0) opts.set_dropout(static_cast<float>(p), seed, offset);
      auto [O, Stats] = g->sdpa(Q, K, V, opts);
      O->set_output(true).set_uid(kO).set_dim(vd).set_stride(token_strides(sh));
      Stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT).set_dim(sd).set_stride(
          contiguous(sd));
    } else {
      auto O = tensor("O", kO, vd), dO = tensor("dO", kDO, vd), Stats = tensor("Stats", kStats, sd);
      O->set_stride(token_strides(sh));
      dO->set_stride(token_strides(sh));
      Stats->set_data_type(fe::DataType_t::FLOAT);
      auto opts = fe::graph::SDPA_backward_attributes()
                      .set_name("rcts_core_attention_backward")
                      .set_causal_mask(true)
                      .set_attn_scale(static_cast<float>(scale))
                      .set_deterministic_algorithm(true);
      if (p > 0) opts.set_dropout(static_cast<float>(p), seed, offset);
      auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, opts);
      dQ->set_output(true).set_uid(kDQ).set_dim(qd).set_stride(contiguous(qd));
      dK->set_output(true).set_uid(kDK).set_dim(qd).set_stride(contiguous(qd));
      dV->set_output(true).set_uid(kDV).set_dim(vd).set_stride(contiguous(vd));
    }
    const std::string what = fwd ? "forward graph" : "backward graph";
    ok(g->validate(), what + " validate");
    ok(g->build_operation_graph(handle_), what + " build_operation_graph");
    ok(g->create_execution_plans({fe::HeurMode_t::A}), what + " create_execution_plans");
    g->deselect_numeric_notes({fe::NumericalNote_t::NONDETERMINISTIC});
    ok(g->check_support(handle_), what + " check_support");
    ok(g->build_plans(handle_), what + " build_plans");
    return *graphs_.emplace(key, std::move(g)).first->second;
  }

  void run(fe::graph::Graph& g, std::unordered_map<int64_t, void*>& pack, double p, uint64_t seed, uint64_t offset,
           const char* what) {
    int64_t need = 0;
    ok(g.get_workspace_size(need), std::string(what) + " get_workspace_size");
    if (need > workspace_bytes_ - kSlotBytes)
      throw Error("cuDNN SDPA " + std::string(what) + " needs " + std::to_string(need) + " bytes of workspace, the op " +
                  "workspace holds " + std::to_string(workspace_bytes_ - kSlotBytes));
    if (p > 0) {
      // Stream-ordered: a later call's copy cannot overtake this call's kernels.
      const int64_t pair[2] = {static_cast<int64_t>(seed), static_cast<int64_t>(offset)};
      check(cudaMemcpyAsync(workspace_, pair, sizeof pair, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync seed");
      pack[kSeed] = workspace_;
      pack[kOffset] = workspace_ + sizeof(int64_t);
    }
    ok(g.execute(handle_, pack, workspace_ + kSlotBytes), what);
  }

  cudaStream_t stream_;
  cudnnHandle_t handle_ = nullptr;
  std::byte* workspace_ = nullptr;
  int64_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<fe::graph::Graph>> graphs_;
};

}  // namespace

std::unique_ptr<CudnnAttention> make_cudnn_attention(cudaStream_t stream) { return std::make_unique<Attention>(stream); }

}  // namespace rcts::cuda
