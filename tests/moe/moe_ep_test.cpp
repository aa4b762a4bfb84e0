// MoeLayer across simulated ranks in one process: each rank is a thread with its own
// Runtime, and the EP / ETP groups are in-process communicators that exchange buffers
// through shared pointers and a barrier. The runs are compared with one rank holding
// all tokens (EP = ETP = 1):
//   EP = 2, ETP = 1: outputs, input gradients and the owners' expert weight gradients
//     are bitwise equal (the same rows meet the same GEMMs in the same order); router
//     and shared-expert gradients are per-rank partial sums that add up to the single
//     rank's (compared in f64 within rounding).
//   EP = 2, ETP = 2 (world 4): fc2 sums two F-shards in rank order, so values agree to
//     rounding (f64), expert gradients are the single rank's shards, and every ETP
//     rank of a group returns the same bits for its own tokens either way.
#include <barrier>
#include <cmath>
#include <functional>
#include <thread>

#include "backends/cpu/cpu_backend.hpp"
#include "moe_test_util.hpp"
#include "reference/modules/tensor_parallel.hpp"

namespace rcts {
namespace {

using namespace moe_test;

// Shared state of one in-process group: every rank publishes its send buffer, waits,
// copies what it needs, waits again (so buffers stay valid until everyone copied).
struct Hub {
  explicit Hub(int n) : size(n), sync(n), ptr(static_cast<size_t>(n)), counts(static_cast<size_t>(n)) {}
  int size;
  std::barrier<> sync;
  std::vector<const std::byte*> ptr;
  std::vector<const int64_t*> counts;
};

class ThreadCommunicator final : public Communicator {
 public:
  using Communicator::all_gather;
  ThreadCommunicator(Hub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.size; }
  std::string backend() const override { return "threads"; }
  void all_gather(const void* send, void* recv, int64_t bytes) override {
    hub_.ptr[static_cast<size_t>(rank_)] = static_cast<const std::byte*>(send);
    hub_.sync.arrive_and_wait();
    for (int r = 0; r < size(); ++r)
      if (bytes > 0) std::memcpy(static_cast<std::byte*>(recv) + r * bytes, hub_.ptr[static_cast<size_t>(r)], static_cast<size_t>(bytes));
    hub_.sync.arrive_and_wait();
  }
  void all_to_allv(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) override {
    hub_.ptr[static_cast<size_t>(rank_)] = static_cast<const std::byte*>(send);
    hub_.counts[static_cast<size_t>(rank_)] = send_bytes;
    hub_.sync.arrive_and_wait();
    int64_t at = 0;
    for (int src = 0; src < size(); ++src) {
      const int64_t* sc = hub_.counts[static_cast<size_t>(src)];
      int64_t offset = 0;
      for (int p = 0; p < rank_; ++p) offset += sc[p];
      RCTS_CHECK(sc[rank_] == recv_bytes[src], "threads all_to_allv: rank " + std::to_string(src) + " sends " +
                                                   std::to_string(sc[rank_]) + " bytes, rank " + std::to_string(rank_) +
                                                   " expects " + std::to_string(recv_bytes[src]));
      if (recv_bytes[src] > 0)
        std::memcpy(static_cast<std::byte*>(recv) + at, hub_.ptr[static_cast<size_t>(src)] + offset,
                    static_cast<size_t>(recv_bytes[src]));
      at += recv_bytes[src];
    }
    hub_.sync.arrive_and_wait();
  }
  void broadcast(void* data, int64_t bytes, int root) override {
    hub_.ptr[static_cast<size_t>(rank_)] = static_cast<const std::byte*>(data);
    hub_.sync.arrive_and_wait();
    if (rank_ != root && bytes > 0) std::memcpy(data, hub_.ptr[static_cast<size_t>(root)], static_cast<size_t>(bytes));
    hub_.sync.arrive_and_wait();
  }
  void barrier() override { hub_.sync.arrive_and_wait(); }

 private:
  Hub& hub_;
  int rank_;
};

struct RankResult {
  Tensor out, dx;
  std::map<std::string, Tensor> grads;
};

Tensor full_input(const Config& c, const char* key) {
  Tensor x = Tensor::empty({tokens_of(c), c.model.hidden_size}, c.model.activation_dtype, Placement{}, key);
  fill_uniform(x, 777, key, 1.0);
  return x;
}

// One forward + backward of `layer` on rows [begin, end) of the fixed input / output grad.
using LayerSetup = std::function<void(MoeLayer&)>;

RankResult run_rank(Runtime& rt, int64_t begin, int64_t end, const LayerSetup& setup = {}) {
  RankResult r;
  MoeLayer layer(rt, kPath);
  if (setup) setup(layer);
  std::vector<Parameter*> params;
  layer.parameters(params);
  zero_grads(params);
  Tensor x = full_input(rt.config, "x").rows(begin, end).clone(rt.place(), "x");
  Tensor dy = full_input(rt.config, "dy").rows(begin, end).clone(rt.place(), "dy");
  SaveContext root(kPath, &rt.save_log, true);
  r.out = untracked(layer.forward(root, x));
  r.dx = untracked(layer.backward(root, dy));
  root.clear();
  for (auto* p : params) r.grads[p->name] = untracked(p->grad);
  return r;
}

// Runs `world` ranks; rank w has EP rank w / etp and ETP rank w % etp (Megatron's
// expert order, etp fastest) and holds token shard w.
std::vector<RankResult> run_world(Config c, int ep, int etp, const LayerSetup& setup = {}) {
  const int world = ep * etp;
  c.parallel.expert_model_parallel_size = ep;
  c.parallel.expert_tensor_parallel_size = etp;
  std::vector<std::unique_ptr<Hub>> ep_hubs, etp_hubs;
  for (int i = 0; i < etp; ++i) ep_hubs.push_back(std::make_unique<Hub>(ep));
  for (int i = 0; i < ep; ++i) etp_hubs.push_back(std::make_unique<Hub>(etp));
  std::vector<RankResult> results(static_cast<size_t>(world));
  const int64_t shard = tokens_of(c) / world;
  std::vector<std::thread> threads;
  for (int w = 0; w < world; ++w)
    threads.emplace_back([&, w] {
      const int ep_rank = w / etp, etp_rank = w % etp;
      ThreadCommunicator ep_comm(*ep_hubs[static_cast<size_t>(etp_rank)], ep_rank);
      ThreadCommunicator etp_comm(*etp_hubs[static_cast<size_t>(ep_rank)], etp_rank);
      Runtime rt(c, cpu::default_backend());
      rt.ep_group = &ep_comm;
      rt.etp_group = &etp_comm;
      seed_runtime(rt, 0, ep_rank, etp_rank);
      results[static_cast<size_t>(w)] = run_rank(rt, w * shard, (w + 1) * shard, setup);
    });
  for (auto& t : threads) t.join();
  return results;
}

RankResult run_single(const Config& c, const LayerSetup& setup = {}) {
  Runtime rt(c, cpu::default_backend());
  seed_runtime(rt);
  return run_rank(rt, 0, tokens_of(c), setup);
}

// Rows [begin, end) of `full` equal `part` bit for bit.
bool same_rows(const Tensor& full, int64_t begin, const Tensor& part) {
  const int64_t rb = full.nbytes() / full.dim(0);
  return part.nbytes() == (part.dim(0)) * rb &&
         std::memcmp(full.bytes() + begin * rb, part.bytes(), static_cast<size_t>(part.nbytes())) == 0;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

Config ep_config(DType dt) {
  Config c = bf16_config();
  c.model.activation_dtype = dt;
  c.model.moe_grouped_gemm = true;
  c.model.moe_shared_expert_intermediate_size = 16;
  c.model.moe_expert_dropout = 0;
  return c;
}

TEST(MoeExpertParallel, TwoEpRanksMatchOneRankBitwise) {
  for (bool grouped : {true, false}) {
    Config c = ep_config(DType::bf16);
    c.model.moe_grouped_gemm = grouped;
    const RankResult single = run_single(c);
    const auto ranks = run_world(c, 2, 1);
    const int64_t shard = tokens_of(c) / 2;
    const int64_t L = c.model.num_moe_experts / 2;
    for (int w = 0; w < 2; ++w) {
      EXPECT_TRUE(same_rows(single.out, w * shard, ranks[static_cast<size_t>(w)].out)) << "rank " << w;
      EXPECT_TRUE(same_rows(single.dx, w * shard, ranks[static_cast<size_t>(w)].dx)) << "rank " << w;
      // Rank w owns experts [w*L, (w+1)*L) and nothing else.
      for (int e = 0; e < c.model.num_moe_experts; ++e)
        for (const char* fc : {"fc1", "fc2"}) {
          const std::string name = std::string(kPath) + ".experts." + std::to_string(e) + "." + fc + ".weight";
          const auto& g = ranks[static_cast<size_t>(w)].grads;
          if (e / L == w) {
            ASSERT_EQ(g.count(name), 1u) << name;
            EXPECT_TRUE(same_bits(g.at(name), single.grads.at(name))) << name;
          } else {
            EXPECT_EQ(g.count(name), 0u) << name;
          }
        }
    }
  }
}

TEST(MoeExpertParallel, PartialGradientsAddUp) {
  Config c = ep_config(DType::f64);
  const RankResult single = run_single(c);
  const auto ranks = run_world(c, 2, 1);
  for (const char* name : {"router.weight", "shared_experts.fc1.weight", "shared_experts.fc2.weight"}) {
    const std::string key = std::string(kPath) + "." + name;
    auto sum = to_vector<double>(ranks[0].grads.at(key));
    auto b = to_vector<double>(ranks[1].grads.at(key));
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += b[i];
    EXPECT_LT(max_abs_diff(sum, to_vector<double>(single.grads.at(key))), 1e-12) << key;
  }
}

TEST(MoeExpertParallel, ExpertTensorParallelMatchesOneRank) {
  for (const char* act : {"gelu", "swiglu"}) {
    SCOPED_TRACE(act);
    Config c = ep_config(DType::f64);
    c.model.activation = act;
    const RankResult single = run_single(c);
    const auto ranks = run_world(c, 2, 2);
    const int64_t shard = tokens_of(c) / 4, L = c.model.num_moe_experts / 2, F = c.model.moe_ffn_hidden_size;
    const int64_t h = c.model.hidden_size, blocks = std::string(act) == "swiglu" ? 2 : 1;
    for (int w = 0; w < 4; ++w) {
      const auto& r = ranks[static_cast<size_t>(w)];
      const int ep_rank = w / 2, etp_rank = w % 2;
      auto rows = [&](const Tensor& full) {
        return to_vector<double>(full.rows(w * shard, (w + 1) * shard));
      };
      EXPECT_LT(max_abs_diff(to_vector<double>(r.out), rows(single.out)), 1e-12) << "rank " << w;
      EXPECT_LT(max_abs_diff(to_vector<double>(r.dx), rows(single.dx)), 1e-12) << "rank " << w;
      for (int64_t j = 0; j < L; ++j) {
        const int64_t e = ep_rank * L + j;
        const std::string base = std::string(kPath) + ".experts." + std::to_string(e);
        // The ETP pair of EP rank ep_rank gathers the tokens of all four ranks, so each
        // shard's gradient is the matching slice of the single rank's gradient.
        // fc1: rows tp_row_blocks of the full (blocks*F, h) gradient.
        const auto keep = tp_row_blocks(blocks * F, static_cast<int>(blocks), etp_rank, 2);
        const auto full1 = to_vector<double>(single.grads.at(base + ".fc1.weight"));
        std::vector<double> want1;
        for (auto [b, e1] : keep)
          for (int64_t row = b; row < e1; ++row)
            want1.insert(want1.end(), full1.begin() + row * h, full1.begin() + (row + 1) * h);
        EXPECT_LT(max_abs_diff(to_vector<double>(r.grads.at(base + ".fc1.weight")), want1), 1e-12) << base;
        const auto full2 = to_vector<double>(single.grads.at(base + ".fc2.weight"));
        std::vector<double> want2;
        for (int64_t row = 0; row < h; ++row)
          want2.insert(want2.end(), full2.begin() + row * F + etp_rank * (F / 2),
                       full2.begin() + row * F + (etp_rank + 1) * (F / 2));
        EXPECT_LT(max_abs_diff(to_vector<double>(r.grads.at(base + ".fc2.weight")), want2), 1e-12) << base;
      }
    }
  }
}

// ETP ranks reduce in rank order, so both members of an ETP group compute identical
// bits for the rows they share; run twice to check the threads' arrival order does not
// matter.
TEST(MoeExpertParallel, ArrivalOrderDoesNotMatter) {
  Config c = ep_config(DType::bf16);
  c.model.moe_expert_dropout = 0.1;
  const auto a = run_world(c, 2, 2);
  const auto b = run_world(c, 2, 2);
  for (size_t w = 0; w < a.size(); ++w) {
    EXPECT_TRUE(same_bits(a[w].out, b[w].out)) << w;
    EXPECT_TRUE(same_bits(a[w].dx, b[w].dx)) << w;
    for (const auto& [name, g] : a[w].grads) EXPECT_TRUE(same_bits(g, b[w].grads.at(name))) << name;
  }
}

// A zero router weight sends every token to experts 0 and 1 (the tie-break), so EP
// rank 1 (experts 2, 3) receives no rows at all: zero-row tensors through dispatch,
// grouped and sequential experts, expert dropout, moe_act and the ETP gather.
TEST(MoeExpertParallel, EmptyExpertsAndEmptyRanks) {
  const LayerSetup zero_router = [](MoeLayer& layer) {
    Tensor& w = layer.router().weight().value;
    std::memset(w.bytes(), 0, static_cast<size_t>(w.nbytes()));
  };
  for (bool grouped : {true, false}) {
    SCOPED_TRACE(grouped ? "grouped" : "sequential");
    Config c = ep_config(DType::bf16);
    c.model.num_moe_experts = 4;
    c.model.moe_grouped_gemm = grouped;
    c.model.moe_expert_dropout = 0.1;
    if (grouped) {
      c.recompute.recompute_granularity = "selective";
      c.recompute.recompute_modules = {"moe_act"};
    }
    const RankResult single = run_single(c, zero_router);
    for (int e = 2; e < 4; ++e) {
      const auto g = to_vector<double>(single.grads.at(std::string(kPath) + ".experts." + std::to_string(e) + ".fc1.weight"));
      for (double v : g) EXPECT_EQ(v, 0.0);
    }
    for (auto [ep, etp] : {std::pair{2, 1}, std::pair{2, 2}}) {
      const auto ranks = run_world(c, ep, etp, zero_router);
      for (const auto& r : ranks) {
        EXPECT_EQ(r.out.dim(0), tokens_of(c) / (ep * etp));
        for (const auto& [name, g] : r.grads)
          if (name.find(".experts.2.") != std::string::npos || name.find(".experts.3.") != std::string::npos) {
            for (double v : to_vector<double>(g)) EXPECT_EQ(v, 0.0) << name;
          }
      }
    }
  }
}

}  // namespace
}  // namespace rcts
