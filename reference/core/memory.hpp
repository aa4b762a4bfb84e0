// Memory domains, categories and the tracker that accounts every allocation
// (design §3). Peaks are kept per domain, per (domain, category) and per (domain, set
// of categories), so cases can assert "device peak", "saved activations on device" or
// "saved activations + checkpoint inputs on device" exactly. The peak of a set is the
// peak of the sum of its categories, which is not the sum of their peaks: a re-tag
// between two categories of a set moves bytes without changing the set's total.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
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

// A set of categories, e.g. CategorySet{Category::saved_activation, Category::checkpoint_input}.
class CategorySet {
 public:
  constexpr CategorySet(std::initializer_list<Category> cs) {
    for (Category c : cs) bits_ = static_cast<uint8_t>(bits_ | bit(c));
  }
  constexpr bool contains(Category c) const { return (bits_ & bit(c)) != 0; }
  constexpr int index() const { return bits_; }  // 0 .. 2^kNumCategories - 1

 private:
  static constexpr uint8_t bit(Category c) { return static_cast<uint8_t>(1u << static_cast<int>(c)); }
  uint8_t bits_ = 0;
};

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
  // Current bytes, peak of their sum and allocations over the categories of `s`.
  MemoryStats categories(Domain d, CategorySet s) const;
  // Resets peaks to the current values (start of a measured region).
  void reset_peaks();

  // Optional capacity of a domain; allocations beyond it throw, naming the request.
  void set_capacity(Domain d, std::optional<int64_t> bytes);
  std::optional<int64_t> capacity(Domain d) const;

 private:
  mutable std::mutex mu_;
  std::array<MemoryStats, kNumDomains> domains_{};
  std::array<std::array<MemoryStats, kNumCategories>, kNumDomains> categories_{};
  // Indexed by CategorySet::index(): every set of categories, kept as bytes move.
  std::array<std::array<MemoryStats, 1u << kNumCategories>, kNumDomains> sets_{};
  std::array<std::optional<int64_t>, kNumDomains> capacity_{};
};

}  // namespace rcts
