// Linear: y = x W^T + b with the full W (out, in). Saves its input. The GEMM order is
// the backend's documented GEMM order (design §2); the bias is added after
// the product (after the TP reduction for row-parallel layers), then the result is
// rounded once to the activation dtype.
//
// Tensor parallelism (Megatron-LM's ColumnParallelLinear / RowParallelLinear):
//   column: this rank keeps the rows tp_row_blocks(out, blocks) of W and b; forward
//           needs the full input (under sequence parallelism it all-gathers the shard
//           and saves only the shard, gathering again in backward); backward
//           all-reduces the input gradient (reduce-scatters it under SP).
//   row:    this rank keeps columns [r*in/t, (r+1)*in/t) of W and the whole b; the
//           partial products are all-reduced (reduce-scattered under SP) in rank
//           order, then b is added. Backward needs the full output gradient (gathered
//           under SP); db is summed over the full gradient, so it is identical on
//           every rank.
#pragma once
#include "reference/modules/module.hpp"

namespace rcts {

enum class TpMode { none, column, row };

struct LinearSpec {
  int64_t in = 0, out = 0;  // full (unsharded) sizes
  bool bias = true;
  TpMode tp = TpMode::none;
  int column_blocks = 1;  // column parallel: equal blocks split inside each (QKV: 3)
};

class Linear final : public Module {
 public:
  Linear(Runtime& rt, std::string path, LinearSpec spec);
  // Column parallel with unequal blocks (the GDN in_proj's q|k|v|z|b|a): each of the
  // consecutive `sections` (summing to spec.out) is split over the ranks on its own.
  Linear(Runtime& rt, std::string path, LinearSpec spec, const std::vector<int64_t>& sections);
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // x (tokens, in_local) -> (tokens, out_local)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override; // dW += dy^T x, db += sum dy
  void parameters(std::vector<Parameter*>& out) override;

  int64_t in_local() const { return in_; }
  int64_t out_local() const { return out_; }

 private:
  bool sp() const;
  Runtime& rt_;
  std::string path_;
  LinearSpec spec_;
  int64_t in_, out_;  // this rank's sizes
  Parameter weight_, bias_;
};

}  // namespace rcts
