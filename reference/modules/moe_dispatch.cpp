#include "reference/modules/moe_dispatch.hpp"

#include <algorithm>

namespace rcts {

namespace {

int64_t row_bytes(const Tensor& t) {
  RCTS_CHECK(t.shape().size() == 2, "moe: rows tensor '" + t.name() + "' must be 2-D, has shape " + shape_str(t.shape()));
  return t.dim(1) * static_cast<int64_t>(dtype_size(t.dtype()));
}

std::vector<int64_t> times(const std::vector<int64_t>& rows, int64_t bytes) {
  std::vector<int64_t> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = rows[i] * bytes;
  return out;
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

// rows (sum of counts) exchanged by all_to_allv: send_rows[p] to p, recv_rows[p] from p.
Tensor exchange(Runtime& rt, Communicator& comm, const Tensor& send, const std::vector<int64_t>& send_rows,
                const std::vector<int64_t>& recv_rows, std::string name) {
  const int64_t rb = row_bytes(send);
  RCTS_CHECK(sum(send_rows) == send.dim(0), "moe exchange of '" + send.name() + "': " + std::to_string(send.dim(0)) +
                                                " rows but the plan sends " + std::to_string(sum(send_rows)));
  Tensor recv = Tensor::empty({sum(recv_rows), send.dim(1)}, send.dtype(), rt.place(), std::move(name));
  const auto sb = times(send_rows, rb), rbv = times(recv_rows, rb);
  comm.all_to_allv(send.bytes(), sb.data(), recv.bytes(), rbv.data());
  return recv;
}

}  // namespace

DispatchPlan make_dispatch_plan(Communicator& ep, const Tensor& topk, int64_t experts, const std::string& where) {
  DispatchPlan p;
  p.tokens = topk.dim(0);
  p.topk = topk.dim(1);
  p.experts = experts;
  p.ep_size = ep.size();
  p.ep_rank = ep.rank();
  RCTS_CHECK(experts % p.ep_size == 0, where + ": " + std::to_string(experts) + " experts do not split over " +
                                           std::to_string(p.ep_size) + " expert-parallel ranks");
  const int64_t L = experts / p.ep_size;
  p.local_experts = L;
  const int32_t* sel = topk.data<int32_t>();
  const int64_t n = p.assignments();

  // Send order = sorted by (expert, token, k): a counting sort by expert that visits
  // assignments in (token, k) order keeps that order within each expert.
  std::vector<int64_t> per_expert(static_cast<size_t>(experts), 0);
  for (int64_t a = 0; a < n; ++a) {
    RCTS_CHECK(sel[a] >= 0 && sel[a] < experts, where + ": routed to expert " + std::to_string(sel[a]) +
                                                    " outside [0, " + std::to_string(experts) + ")");
    ++per_expert[static_cast<size_t>(sel[a])];
  }
  std::vector<int64_t> next(static_cast<size_t>(experts), 0);
  for (int64_t e = 1; e < experts; ++e) next[static_cast<size_t>(e)] = next[static_cast<size_t>(e - 1)] + per_expert[static_cast<size_t>(e - 1)];
  p.position.resize(static_cast<size_t>(n));
  p.send_token.resize(static_cast<size_t>(n));
  for (int64_t a = 0; a < n; ++a) {
    const int64_t pos = next[static_cast<size_t>(sel[a])]++;
    p.position[static_cast<size_t>(a)] = pos;
    p.send_token[static_cast<size_t>(pos)] = a / p.topk;
  }
  p.send_rows.assign(static_cast<size_t>(p.ep_size), 0);
  for (int64_t e = 0; e < experts; ++e) p.send_rows[static_cast<size_t>(e / L)] += per_expert[static_cast<size_t>(e)];

  // Counts first: block p of per_expert holds p's L experts.
  p.recv_counts.assign(static_cast<size_t>(experts), 0);
  ep.all_to_all_host(per_expert.data(), p.recv_counts.data(), L * static_cast<int64_t>(sizeof(int64_t)));
  p.recv_rows.assign(static_cast<size_t>(p.ep_size), 0);
  p.expert_counts.assign(static_cast<size_t>(L), 0);
  for (int src = 0; src < p.ep_size; ++src)
    for (int64_t j = 0; j < L; ++j) {
      const int64_t c = p.recv_counts[static_cast<size_t>(src * L + j)];
      RCTS_CHECK(c >= 0, where + ": EP rank " + std::to_string(src) + " announced a negative row count");
      p.recv_rows[static_cast<size_t>(src)] += c;
      p.expert_counts[static_cast<size_t>(j)] += c;
    }

  // Received layout (src, j, order) -> expert layout (j, src, order).
  std::vector<int64_t> src_begin(static_cast<size_t>(p.ep_size), 0);
  for (int src = 1; src < p.ep_size; ++src)
    src_begin[static_cast<size_t>(src)] = src_begin[static_cast<size_t>(src - 1)] + p.recv_rows[static_cast<size_t>(src - 1)];
  for (int64_t j = 0; j < L; ++j)
    for (int src = 0; src < p.ep_size; ++src) {
      int64_t begin = src_begin[static_cast<size_t>(src)];
      for (int64_t jj = 0; jj < j; ++jj) begin += p.recv_counts[static_cast<size_t>(src * L + jj)];
      for (int64_t r = 0; r < p.recv_counts[static_cast<size_t>(src * L + j)]; ++r) p.expert_to_recv.push_back(begin + r);
    }
  p.recv_to_expert.assign(p.expert_to_recv.size(), 0);
  for (size_t i = 0; i < p.expert_to_recv.size(); ++i)
    p.recv_to_expert[static_cast<size_t>(p.expert_to_recv[i])] = static_cast<int64_t>(i);
  return p;
}

Tensor gather_rows(Runtime& rt, const Tensor& in, const std::vector<int64_t>& index, std::string name) {
  const int64_t rb = row_bytes(in);
  Tensor out = Tensor::uninitialized({static_cast<int64_t>(index.size()), in.dim(1)}, in.dtype(), rt.place(),
                                     std::move(name));
  if (rb == 0 || index.empty()) return out;
  for (const int64_t i : index)
    RCTS_CHECK(i >= 0 && i < in.dim(0), "moe: row " + std::to_string(i) + " of '" + in.name() + "' out of range (" +
                                            std::to_string(in.dim(0)) + " rows)");
  rt.backend.gather_rows(out.bytes(), in.bytes(), rb, in.dim(0), index);
  return out;
}

Tensor dispatch_rows(Runtime& rt, Communicator& ep, const DispatchPlan& plan, const Tensor& send_order,
                     std::string name) {
  Tensor received = exchange(rt, ep, send_order, plan.send_rows, plan.recv_rows, name + ".received");
  return gather_rows(rt, received, plan.expert_to_recv, std::move(name));
}

Tensor return_rows(Runtime& rt, Communicator& ep, const DispatchPlan& plan, const Tensor& expert_layout,
                   std::string name) {
  RCTS_CHECK(expert_layout.dim(0) == plan.received(),
             "moe return of '" + expert_layout.name() + "': " + std::to_string(expert_layout.dim(0)) +
                 " rows but " + std::to_string(plan.received()) + " were dispatched here");
  Tensor back = gather_rows(rt, expert_layout, plan.recv_to_expert, name + ".unpermuted");
  return exchange(rt, ep, back, plan.recv_rows, plan.send_rows, std::move(name));
}

EtpPlan make_etp_plan(Communicator& etp, const std::vector<int64_t>& my_counts) {
  EtpPlan p;
  p.size = etp.size();
  p.rank = etp.rank();
  const int64_t L = static_cast<int64_t>(my_counts.size());
  p.local_experts = L;
  p.counts = etp.all_gather(my_counts);
  // Received (q-major, each q in its own expert layout) -> gathered (j, q, order).
  std::vector<int64_t> q_begin(static_cast<size_t>(p.size), 0);
  for (int q = 1; q < p.size; ++q) {
    int64_t total = 0;
    for (int64_t j = 0; j < L; ++j) total += p.counts[static_cast<size_t>((q - 1) * L + j)];
    q_begin[static_cast<size_t>(q)] = q_begin[static_cast<size_t>(q - 1)] + total;
  }
  p.gathered_counts.assign(static_cast<size_t>(L), 0);
  for (int64_t j = 0; j < L; ++j)
    for (int q = 0; q < p.size; ++q) {
      int64_t begin = q_begin[static_cast<size_t>(q)];
      for (int64_t jj = 0; jj < j; ++jj) begin += p.counts[static_cast<size_t>(q * L + jj)];
      const int64_t c = p.counts[static_cast<size_t>(q * L + j)];
      for (int64_t r = 0; r < c; ++r) {
        if (q == p.rank) p.own_rows.push_back(static_cast<int64_t>(p.gathered_index.size()));
        p.gathered_index.push_back(begin + r);
      }
      p.gathered_counts[static_cast<size_t>(j)] += c;
    }
  return p;
}

Tensor etp_gather(Runtime& rt, Communicator& etp, const EtpPlan& plan, const Tensor& mine, std::string name) {
  RCTS_CHECK(mine.dim(0) == plan.own(), "moe ETP gather of '" + mine.name() + "': " + std::to_string(mine.dim(0)) +
                                            " rows but the plan has " + std::to_string(plan.own()));
  const int64_t L = plan.local_experts;
  // Every peer gets this rank's whole buffer: send it `size` times, packed in rank order.
  Tensor send = Tensor::uninitialized({mine.dim(0) * plan.size, mine.dim(1)}, mine.dtype(), rt.place(), name + ".send");
  for (int q = 0; q < plan.size; ++q) send.rows(q * mine.dim(0), (q + 1) * mine.dim(0)).copy_from(mine);
  std::vector<int64_t> send_rows(static_cast<size_t>(plan.size), mine.dim(0)), recv_rows(static_cast<size_t>(plan.size), 0);
  for (int q = 0; q < plan.size; ++q)
    for (int64_t j = 0; j < L; ++j) recv_rows[static_cast<size_t>(q)] += plan.counts[static_cast<size_t>(q * L + j)];
  Tensor received = exchange(rt, etp, send, send_rows, recv_rows, name + ".received");
  return gather_rows(rt, received, plan.gathered_index, std::move(name));
}

template <typename T>
void etp_reduce_own_rows(Runtime& rt, Communicator& etp, const EtpPlan& plan, std::span<T> data, int64_t width,
                         std::span<T> own) {
  RCTS_CHECK(static_cast<int64_t>(data.size()) == plan.gathered() * width &&
                 static_cast<int64_t>(own.size()) == plan.own() * width,
             "moe ETP reduction: buffers of " + std::to_string(data.size()) + " and " + std::to_string(own.size()) +
                 " elements, expected " + std::to_string(plan.gathered()) + " and " + std::to_string(plan.own()) +
                 " rows x " + std::to_string(width));
  rt.all_reduce_sum(etp, data.data(), static_cast<int64_t>(data.size()));
  rt.backend.gather_rows(own.data(), data.data(), width * static_cast<int64_t>(sizeof(T)), plan.gathered(),
                         plan.own_rows);
}

template void etp_reduce_own_rows<float>(Runtime&, Communicator&, const EtpPlan&, std::span<float>, int64_t,
                                         std::span<float>);
template void etp_reduce_own_rows<double>(Runtime&, Communicator&, const EtpPlan&, std::span<double>, int64_t,
                                          std::span<double>);

}  // namespace rcts
