// MoE token dispatch over the expert-parallel (EP) group and the expert-tensor-parallel
// (ETP) gather, as deterministic row permutations plus byte exchanges. Rows are moved
// as raw bytes of their dtype (exact); nothing here adds numbers except
// etp_reduce_own_rows, which sums in rank order through Communicator::all_reduce_sum.
//
// EP layout. EP rank p of P owns the global experts [p*L, (p+1)*L), L = E / P.
// The source rank lists its (token t, slot k) assignments (expert e = topk[t][k]) in
// SEND ORDER: sorted by (e, t, k). Because the owner of e grows with e, this is also
// grouped by destination rank in rank order, and within a destination by local expert.
//   1. counts: every rank sends, per destination p, the L row counts of p's experts
//      (Communicator::all_to_all of L int64 per peer);
//   2. rows: all_to_allv of the rows in send order (block p = rows for p);
//   3. the receiver holds RECEIVED LAYOUT (source rank major, then local expert, then
//      the source's (t, k) order) and permutes it to EXPERT LAYOUT: local expert j
//      major, then source rank, then the source's order.
// The return trip (expert outputs in forward, input gradients in backward) applies the
// inverse permutation and the mirrored all_to_allv, so the source gets its rows back
// in send order. Gradients of expert outputs travel the forward path with the same
// layout.
//
// ETP layout. Every ETP rank q of Q holds its own expert-layout rows (counts c_q[j]).
// etp_gather makes every ETP rank hold GATHERED LAYOUT: expert j major, then ETP rank q
// in rank order, then q's rows of j (counts are all-gathered first; the rows travel by
// an all_to_allv in which each rank sends its whole buffer to every peer). Rank q's own
// rows are the (j, q) blocks. etp_reduce_own_rows all-reduces a gathered-layout
// compute-type buffer over ETP (rank order) and keeps this rank's own rows, in its
// expert layout.
#pragma once
#include <span>
#include <vector>

#include "reference/runtime/runtime.hpp"

namespace rcts {

struct DispatchPlan {
  int64_t tokens = 0, topk = 0, experts = 0, local_experts = 0;
  int ep_size = 1, ep_rank = 0;
  // position[t * topk + k]: index of assignment (t, k) in send order.
  std::vector<int64_t> position;
  // send_token[i]: the token whose row is the i-th row in send order.
  std::vector<int64_t> send_token;
  std::vector<int64_t> send_rows;  // per destination rank
  std::vector<int64_t> recv_rows;  // per source rank
  // recv_counts[src * local_experts + j]: rows from `src` for local expert j.
  std::vector<int64_t> recv_counts;
  std::vector<int64_t> expert_counts;   // rows per local expert (expert layout)
  std::vector<int64_t> expert_to_recv;  // expert-layout row i = received row expert_to_recv[i]
  std::vector<int64_t> recv_to_expert;  // its inverse
  int64_t assignments() const { return tokens * topk; }
  int64_t received() const { return static_cast<int64_t>(expert_to_recv.size()); }
};

// Collective over `ep` (exchanges the counts). topk is (tokens, k) i32.
DispatchPlan make_dispatch_plan(Communicator& ep, const Tensor& topk, int64_t experts, const std::string& where);

// out row i = in row index[i] (a copy in `in`'s dtype; `name` names the result).
Tensor gather_rows(Runtime& rt, const Tensor& in, const std::vector<int64_t>& index, std::string name);

// Source side rows in send order (assignments x width) -> expert layout on the owners.
Tensor dispatch_rows(Runtime& rt, Communicator& ep, const DispatchPlan& plan, const Tensor& send_order,
                     std::string name);
// Owner side rows in expert layout -> the sources' send order (the return trip).
Tensor return_rows(Runtime& rt, Communicator& ep, const DispatchPlan& plan, const Tensor& expert_layout,
                   std::string name);

struct EtpPlan {
  int size = 1, rank = 0;
  int64_t local_experts = 0;
  std::vector<int64_t> counts;         // [q * local_experts + j]
  std::vector<int64_t> gathered_counts;  // per local expert j: sum over q
  std::vector<int64_t> gathered_index;   // gathered row i = received (q-major) row gathered_index[i]
  std::vector<int64_t> own_rows;         // gathered-layout indices of this rank's rows, in its expert layout
  int64_t own() const { return static_cast<int64_t>(own_rows.size()); }
  int64_t gathered() const { return static_cast<int64_t>(gathered_index.size()); }
};

// Collective over `etp` (all-gathers the counts).
EtpPlan make_etp_plan(Communicator& etp, const std::vector<int64_t>& my_counts);
// This rank's expert-layout rows -> gathered layout on every ETP rank.
Tensor etp_gather(Runtime& rt, Communicator& etp, const EtpPlan& plan, const Tensor& mine, std::string name);
// data: gathered-layout (rows x width) partial sums in T. All-reduced over ETP in rank
// order (in place); this rank's own rows (own() x width) are copied into `own`.
template <typename T>
void etp_reduce_own_rows(Runtime& rt, Communicator& etp, const EtpPlan& plan, std::span<T> data, int64_t width,
                         std::span<T> own);

}  // namespace rcts
