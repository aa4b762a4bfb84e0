// Communicator interface (DESIGN §8). Collectives that reduce are deterministic:
// gather everything, then sum in rank order, identically on every rank. Backends:
// `single` (world of one, here), `mpi` and `nccl` (later issues).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace rcts {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;
  // recv holds size() * bytes: rank r's `send` at offset r * bytes.
  virtual void all_gather(const void* send, void* recv, int64_t bytes) = 0;
  virtual void barrier() = 0;
};

// A group of one rank: every collective is a copy.
class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  void all_gather(const void* send, void* recv, int64_t bytes) override;
  void barrier() override {}
};

}  // namespace rcts
