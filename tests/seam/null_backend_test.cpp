// The seam at link time: this test links the driver, the modules and everything below
// them but no kernel library and no backend implementation. A module that called a
// kernel directly would not link. At run time a backend whose every op throws shows
// that the model is built without arithmetic and that its forward's first arithmetic
// is a backend op.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "reference/driver/model.hpp"

namespace rcts {
namespace {

struct NullBackendCalled : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void called(const char* op) { throw NullBackendCalled(op); }

template <typename T>
class NullOps final : public Ops<T> {
 public:
  void gemm(Trans, Trans, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, int64_t,
            bool) override { called("gemm"); }
  void gemm_batched(Trans, Trans, int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const T*, int64_t, int64_t,
                    T*, int64_t, int64_t, int64_t, bool) override { called("gemm_batched"); }
  void layernorm_forward(T*, const T*, const T*, const T*, int64_t, int64_t, double) override {
    called("layernorm_forward");
  }
  void layernorm_backward(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, double) override {
    called("layernorm_backward");
  }
  void softmax_causal_forward(T*, const T*, int64_t, int64_t) override { called("softmax_causal_forward"); }
  void softmax_causal_backward(T*, const T*, const T*, int64_t, int64_t) override { called("softmax_causal_backward"); }
  void dropout_apply(T*, const T*, const uint8_t*, int64_t, double) override { called("dropout_apply"); }
  void gelu_forward(T*, const T*, int64_t) override { called("gelu_forward"); }
  void gelu_backward(T*, const T*, const T*, int64_t) override { called("gelu_backward"); }
  void swiglu_forward(T*, const T*, int64_t, int64_t) override { called("swiglu_forward"); }
  void swiglu_backward(T*, const T*, const T*, int64_t, int64_t) override { called("swiglu_backward"); }
  void add(T*, const T*, const T*, int64_t) override { called("add"); }
  void bias_add(T*, const T*, const T*, int64_t, int64_t) override { called("bias_add"); }
  void bias_backward(T*, const T*, int64_t, int64_t) override { called("bias_backward"); }
  void scale(T*, const T*, T, int64_t) override { called("scale"); }
  void sum_blocks(T*, const T*, int64_t, std::span<const int>) override { called("sum_blocks"); }
  T mse_loss(const T*, const T*, int64_t) override { called("mse_loss"); }
  void mse_loss_backward(T*, const T*, const T*, int64_t) override { called("mse_loss_backward"); }
  void sgd_step(T*, const T*, int64_t, T) override { called("sgd_step"); }
  void row_softmax_forward(T*, const T*, int64_t, int64_t) override { called("row_softmax_forward"); }
  void row_softmax_backward(T*, const T*, const T*, int64_t, int64_t) override { called("row_softmax_backward"); }
  void topk_select(int32_t*, T*, const T*, int64_t, int64_t, int64_t) override { called("topk_select"); }
  T aux_loss(const T*, const int32_t*, int64_t, int64_t, int64_t, double) override { called("aux_loss"); }
  void topk_scatter(T*, const int32_t*, const T*, int64_t, int64_t, int64_t) override { called("topk_scatter"); }
  void moe_combine(T*, const T*, const T*, std::span<const int64_t>, const T*, int64_t, int64_t, int64_t) override {
    called("moe_combine");
  }
  void moe_combine_backward(T*, T*, const T*, const T*, const T*, std::span<const int64_t>, int64_t, int64_t,
                            int64_t) override { called("moe_combine_backward"); }
  void moe_input_grad(T*, const T*, std::span<const int64_t>, const T*, const T*, int64_t, int64_t, int64_t) override {
    called("moe_input_grad");
  }
  void causal_conv_silu_forward(T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t) override {
    called("causal_conv_silu_forward");
  }
  void causal_conv_silu_backward(T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t,
                                 int64_t) override { called("causal_conv_silu_backward"); }
  void gated_delta_rule_forward(T*, const T*, const T*, const T*, const T*, const T*, const T*, const T*, int64_t,
                                int64_t, int64_t, int64_t, int64_t, int64_t) override {
    called("gated_delta_rule_forward");
  }
  void gated_delta_rule_backward(T*, T*, T*, T*, T*, T*, T*, const T*, const T*, const T*, const T*, const T*,
                                 const T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                 int64_t) override { called("gated_delta_rule_backward"); }
  void gated_rmsnorm_forward(T*, const T*, const T*, const T*, int64_t, int64_t, double) override {
    called("gated_rmsnorm_forward");
  }
  void gated_rmsnorm_backward(T*, T*, T*, const T*, const T*, const T*, const T*, int64_t, int64_t, double) override {
    called("gated_rmsnorm_backward");
  }
};

class NullBackend final : public Backend {
 public:
  std::string name() const override { return "null"; }
  std::string description() const override { return "every op throws"; }
  Ops<float>& f32() override { return f32_; }
  Ops<double>& f64() override { return f64_; }
  MemoryResource& memory() override { return host_memory(); }
  void convert(void*, DType, const void*, DType, int64_t) override { called("convert"); }
  void tokens_to_heads(void*, const void*, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) override {
    called("tokens_to_heads");
  }
  void heads_to_tokens(void*, const void*, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) override {
    called("heads_to_tokens");
  }
  void gather_rows(void*, const void*, int64_t, int64_t, std::span<const int64_t>) override { called("gather_rows"); }
  void dropout_mask(uint8_t*, int64_t, double, uint64_t, uint64_t) override { called("dropout_mask"); }
  std::unique_ptr<CopyStream> make_copy_stream(const std::string&, LinkModel) override { called("make_copy_stream"); }

 private:
  NullOps<float> f32_;
  NullOps<double> f64_;
};

TEST(Seam, ModelBuildsWithoutArithmeticAndItsForwardReachesTheBackendFirst) {
  NullBackend backend;
  Config c;
  c.model.activation_dtype = DType::f32;
  Runtime rt(c, backend);
  seed_runtime(rt);
  GptModel model(rt);
  EXPECT_FALSE(model.parameters().empty());
  MicroBatch m = model.start(0, 0);
  try {
    model.forward(m);
    FAIL() << "a forward ran without a single backend op";
  } catch (const NullBackendCalled& e) {
    // The block starts with the input layernorm (design §4).
    EXPECT_STREQ(e.what(), "layernorm_forward");
  }
}

}  // namespace
}  // namespace rcts
