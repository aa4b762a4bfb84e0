// Communicator interface (docs/design.md §8). Implementations move bytes only
// (all_gather, all_to_allv, broadcast, barrier, split); sums over ranks are
// reference/runtime/reduce.hpp, which gathers with these and adds on the compute
// backend in summation_order(), so every communicator reduces in the same order.
// Point to point (send, recv, send_recv) carries pipeline activations and gradients
// between neighbouring stages (design §16): blocking, delivered in posting order per
// peer, the byte count checked on arrival.
//
// The mutant Fault::reduction_arrival_order replaces rank order by "own rank first"
// (r, r+1, ..., size-1, 0, ..., r-1), which is what a reduction that adds in arrival
// order can produce; rank 0 then still matches the rank-ordered sum and the other
// ranks may not.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/memory_resource.hpp"

namespace rcts {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;

  // --- byte-moving collectives, one implementation per backend -------------------
  // recv holds size() * bytes: rank r's `send` at offset r * bytes. Every rank passes
  // the same `bytes`.
  virtual void all_gather(const void* send, void* recv, int64_t bytes) = 0;
  // Personalised exchange. send_bytes[p] bytes go to rank p, read from `send` packed
  // in rank order (rank 0's block first); recv_bytes[p] bytes arrive from rank p and
  // are written to `recv` packed in rank order. recv_bytes[p] on this rank must equal
  // send_bytes[rank()] on rank p. Both arrays have size() entries.
  virtual void all_to_allv(const void* send, const int64_t* send_bytes, void* recv,
                           const int64_t* recv_bytes) = 0;
  // Copies `bytes` bytes from `data` on `root` into `data` on every rank.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Collective: ranks passing the same `color` form one new communicator, ranked by
  // `key` (ties by rank()). Backends that cannot split throw.
  virtual std::unique_ptr<Communicator> split(int color, int key);

  // --- point to point (pipeline stages); implementations without it throw ----------
  // Blocks until `bytes` bytes went to rank `dest` (may return once they are buffered).
  virtual void send(const void* data, int64_t bytes, int dest);
  // Blocks until exactly `bytes` bytes arrived from rank `src` (another count: an error).
  virtual void recv(void* data, int64_t bytes, int src);
  // Both at once, neither waiting for the other first (Megatron-LM's
  // send_forward_recv_backward / send_backward_recv_forward), so two neighbours that
  // exchange in the same call cannot deadlock.
  virtual void send_recv(const void* send, int64_t send_bytes, int dest, void* recv, int64_t recv_bytes, int src);

  // --- the same collectives on host memory (counts, plans, names) ------------------
  // The byte collectives above move a tensor's bytes, which may be a backend's device
  // memory; these say the buffers are host memory. By default they are the byte
  // collectives (MPI moves host memory; NCCL stages host buffers itself);
  // SingleCommunicator, which copies through the backend's memory, copies them on the host.
  virtual void all_gather_host(const void* send, void* recv, int64_t bytes) { all_gather(send, recv, bytes); }
  virtual void all_to_allv_host(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) {
    all_to_allv(send, send_bytes, recv, recv_bytes);
  }

  // --- typed helpers, implemented once for every implementation -------------------
  // all_to_allv with the same block size for every peer: the block for rank p sits at
  // send + p * bytes_per_peer, the block from rank p lands at recv + p * bytes_per_peer.
  void all_to_all(const void* send, void* recv, int64_t bytes_per_peer);
  // The same on host memory (all_to_allv_host).
  void all_to_all_host(const void* send, void* recv, int64_t bytes_per_peer);
  // Typed all_gather of host memory: recv.size() must be size() * send.size().
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void all_gather(std::span<const T> send, std::span<T> recv) {
    RCTS_CHECK(static_cast<int64_t>(recv.size()) == static_cast<int64_t>(send.size()) * size(),
               backend() + " all_gather: recv holds " + std::to_string(recv.size()) + " elements, expected " +
                   std::to_string(send.size()) + " x " + std::to_string(size()) + " ranks");
    all_gather_host(static_cast<const void*>(send.data()), static_cast<void*>(recv.data()),
                    static_cast<int64_t>(send.size_bytes()));
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  std::vector<T> all_gather(const std::vector<T>& send) {
    std::vector<T> recv(send.size() * static_cast<size_t>(size()));
    all_gather(std::span<const T>(send), std::span<T>(recv));
    return recv;
  }

  // The order in which this rank adds the ranks' contributions: 0, 1, ..., size()-1,
  // or the rotated order while Fault::reduction_arrival_order is active.
  std::vector<int> summation_order() const;
};

// A group of one rank: every collective is a copy, through `memory` when given (a
// backend's device memory the host cannot touch), else a plain memmove. The host
// collectives are always a memmove: a device copy may still be in flight when it returns.
class SingleCommunicator final : public Communicator {
 public:
  explicit SingleCommunicator(MemoryResource* memory = nullptr) : memory_(memory) {}
  using Communicator::all_gather;
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  void all_gather(const void* send, void* recv, int64_t bytes) override;
  void all_to_allv(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) override;
  void all_gather_host(const void* send, void* recv, int64_t bytes) override;
  void all_to_allv_host(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) override;
  void broadcast(void* data, int64_t bytes, int root) override;
  void barrier() override {}
  std::unique_ptr<Communicator> split(int color, int key) override;

 private:
  void copy(void* dst, const void* src, int64_t bytes, Domain d);
  MemoryResource* memory_;
};

}  // namespace rcts
