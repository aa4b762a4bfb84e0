// MoeLayer against central finite differences in f64 (single rank: EP = ETP = 1).
// Every element of the input and of every parameter is checked. Expert-dropout masks
// are held fixed by reseeding the RNG before every forward. Top-k routing is
// piecewise: each test first asserts that no token has a near tie between its k-th and
// (k+1)-th expert, so a perturbation of eps cannot change the routing.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_backend.hpp"
#include "moe_test_util.hpp"

namespace rcts {
namespace {

using namespace moe_test;

Tensor random_f64(Runtime& rt, const Shape& shape, const std::string& key) {
  Tensor t = Tensor::empty(shape, DType::f64, rt.place(), key);
  fill_uniform(t, 4242, key, 1.0);
  return t;
}

// Smallest gap, over tokens, between the k-th and (k+1)-th largest probabilities.
double min_routing_gap(Runtime& rt, MoeLayer& layer, const Tensor& x) {
  SaveContext ctx("", nullptr, false);
  RouterOutput r = layer.router().forward(ctx, x);
  const int64_t E = r.probs.dim(1), K = r.topk.dim(1);
  double gap = 1;
  for (int64_t t = 0; t < r.probs.dim(0); ++t) {
    std::vector<double> p(r.probs.data<double>() + t * E, r.probs.data<double>() + (t + 1) * E);
    std::sort(p.begin(), p.end(), std::greater<>());
    if (K < E) gap = std::min(gap, p[static_cast<size_t>(K - 1)] - p[static_cast<size_t>(K)]);
  }
  (void)rt;
  return gap;
}

void gradcheck(const Config& c) {
  Runtime rt(c, cpu::default_backend());
  MoeLayer layer(rt, kPath);
  std::vector<Parameter*> params;
  layer.parameters(params);
  Tensor x = random_f64(rt, {tokens_of(c), c.model.hidden_size}, "x");
  Tensor w = random_f64(rt, x.shape(), "w");
  ASSERT_GT(min_routing_gap(rt, layer, x), 1e-4) << "near tie in routing: pick another input";

  auto loss = [&] {
    seed_runtime(rt);
    SaveContext ctx("", nullptr, false);
    Tensor y = layer.forward(ctx, x);
    double l = 0;
    for (int64_t i = 0; i < y.numel(); ++i) l += y.data<double>()[i] * w.data<double>()[i];
    return l;
  };

  seed_runtime(rt);
  zero_grads(params);
  SaveContext ctx(kPath, nullptr, true);
  layer.forward(ctx, x);
  Tensor dx = layer.backward(ctx, w);

  const double eps = 1e-6, tol = 1e-6;
  auto fd = [&](double* v) {
    const double keep = *v;
    *v = keep + eps;
    const double lp = loss();
    *v = keep - eps;
    const double lm = loss();
    *v = keep;
    return (lp - lm) / (2 * eps);
  };
  int64_t checked = 0;
  auto compare = [&](const std::string& what, double analytic, double numeric) {
    ++checked;
    EXPECT_NEAR(analytic, numeric, tol * std::max(1.0, std::fabs(numeric))) << what;
  };
  for (int64_t i = 0; i < x.numel(); ++i)
    compare("input[" + std::to_string(i) + "]", dx.data<double>()[i], fd(x.data<double>() + i));
  for (auto* p : params)
    for (int64_t i = 0; i < p->value.numel(); ++i)
      compare(p->name + "[" + std::to_string(i) + "]", p->grad.data<double>()[i], fd(p->value.data<double>() + i));
  EXPECT_GT(checked, 0);
}

TEST(MoeGradcheck, GeluGroupedGemm) {
  Config c = small_config();
  c.model.moe_grouped_gemm = true;
  gradcheck(c);
}

TEST(MoeGradcheck, GeluSequentialExperts) {
  Config c = small_config();
  c.model.moe_grouped_gemm = false;
  gradcheck(c);
}

TEST(MoeGradcheck, SwigluSharedExpertsExpertDropout) {
  Config c = small_config();
  c.model.activation = "swiglu";
  c.model.moe_grouped_gemm = true;
  c.model.moe_shared_expert_intermediate_size = 4;
  c.model.moe_expert_dropout = 0.2;
  gradcheck(c);
}

TEST(MoeGradcheck, SequentialSharedExpertsExpertDropoutTop1) {
  Config c = small_config();
  c.model.moe_router_topk = 1;
  c.model.moe_grouped_gemm = false;
  c.model.moe_shared_expert_intermediate_size = 4;
  c.model.moe_expert_dropout = 0.2;
  gradcheck(c);
}

// Gradients through the recompute paths (moe_act + shared_experts) match finite
// differences too, not only the no-recompute baseline.
TEST(MoeGradcheck, RecomputeMoeActAndSharedExperts) {
  Config c = small_config();
  c.model.moe_grouped_gemm = true;
  c.model.moe_shared_expert_intermediate_size = 4;
  c.model.moe_expert_dropout = 0.2;
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"moe_act", "shared_experts"};
  gradcheck(c);
}

}  // namespace
}  // namespace rcts
