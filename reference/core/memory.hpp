// Memory domains, categories and the tracker that accounts every allocation
// (design §3). Peaks are kept per domain and per (domain, category), so cases can
// assert "device peak" or "saved activations on device" exactly.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace rcts {

enum class Domain : uint8_t { host, host_pinned, device };
inline constexpr int kNumDomains = 3;

// What the bytes are for. A storage starts as `activation` (an op output) and is
// re-tagged `saved_activation` or `checkpoint_input` when a SaveContext keeps it.
enum class Category : uint8_t {
  param, grad, activation, saved_activation, checkpoint_input, workspace, offload_buffer
};
inline constexpr int kNumCategories = 7;

std::string_view domain_name(Domain d);
std::string_view category_name(Category c);

struct MemoryStats {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocations = 0;
};

// Thread-safe: offload copy workers allocate and free concurrently with compute.
class MemoryTracker {
 public:
  void on_alloc(Domain d, Category c, int64_t bytes);
  void on_free(Domain d, Category c, int64_t bytes);
  void on_retag(Domain d, Category from, Category to, int64_t bytes);

  MemoryStats domain(Domain d) const;
  MemoryStats category(Domain d, Category c) const;
  // Resets peaks to the current values (start of a measured region).
  void reset_peaks();

  // Optional capacity of a domain; allocations beyond it throw, naming the request.
  void set_capacity(Domain d, std::optional<int64_t> bytes);
  std::optional<int64_t> capacity(Domain d) const;

 private:
  mutable std::mutex mu_;
  std::array<MemoryStats, kNumDomains> domains_{};
  std::array<std::array<MemoryStats, kNumCategories>, kNumDomains> categories_{};
  std::array<std::optional<int64_t>, kNumDomains> capacity_{};
};

}  // namespace rcts
