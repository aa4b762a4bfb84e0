// Tensor = storage + element offset + shape + dtype + name (docs/design.md §3). Always
// row-major contiguous; views share the storage. Typed access is checked: the dtype
// must match and the storage must not be released (the error names the tensor).
// data<T>() points into the storage's domain (device memory on a GPU backend): pass it
// to backend ops; host code reads values through to_vector/load or a host clone.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/bf16.hpp"
#include "reference/core/dtype.hpp"
#include "reference/core/error.hpp"
#include "reference/core/storage.hpp"

namespace rcts {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);
int64_t shape_numel(const Shape& s);

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<bf16>() { return DType::bf16; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }

// Where new tensors are allocated and accounted. A null `memory` is the host heap
// (host_memory()).
struct Placement {
  MemoryTracker* tracker = nullptr;
  Domain domain = Domain::device;
  Category category = Category::activation;
  MemoryResource* memory = nullptr;
};
// Untracked host memory: results that outlive a run, staging buffers.
inline Placement host_placement() { return {nullptr, Domain::host, Category::activation, nullptr}; }

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled. uninitialized(): for outputs an op writes completely.
  static Tensor empty(const Shape& shape, DType dtype, const Placement& where, std::string name);
  static Tensor uninitialized(const Shape& shape, DType dtype, const Placement& where, std::string name);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i < 0 ? i + static_cast<int>(shape_.size()) : i)); }
  int64_t numel() const { return shape_numel(shape_); }
  int64_t nbytes() const { return numel() * static_cast<int64_t>(dtype_size(dtype_)); }
  DType dtype() const { return dtype_; }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  int64_t offset() const { return offset_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool released() const { return storage_ && storage_->released(); }

  template <typename T> T* data() {
    check_dtype(dtype_of<T>());
    return reinterpret_cast<T*>(storage_->data(name_)) + offset_;
  }
  template <typename T> const T* data() const {
    check_dtype(dtype_of<T>());
    return reinterpret_cast<const T*>(storage_->data(name_)) + offset_;
  }
  // Untyped bytes of this tensor (little-endian, as stored).
  const std::byte* bytes() const;
  std::byte* bytes() { return const_cast<std::byte*>(static_cast<const Tensor*>(this)->bytes()); }

  // A view with another shape of the same numel, sharing storage.
  Tensor view(const Shape& shape, std::string name = {}) const;
  // A copy with its own storage at `where` (a null tracker: untracked, e.g. results
  // that outlive the run's memory tracker).
  Tensor clone(const Placement& where, std::string name = {}) const;
  // Rows [begin, end) of the leading dimension, sharing storage.
  Tensor rows(int64_t begin, int64_t end, std::string name = {}) const;

  // Byte-level writes through the storage's memory resource (any domain).
  void fill_bytes(uint8_t value);
  void copy_from(const Tensor& src);             // same byte count
  void write_from_host(const void* src);         // nbytes() bytes of host memory
  void read_to_host(void* dst) const;            // nbytes() bytes into host memory
  bool host_accessible() const { return storage_ && storage_->host_accessible(); }

 private:
  void check_dtype(DType want) const;
  static Tensor create(const Shape& shape, DType dtype, const Placement& where, std::string name, bool zero);
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  DType dtype_ = DType::f32;
  std::string name_;
};

// Element-wise conversions between storage dtypes and host values (float/double), on
// the host: a tensor in memory the host cannot reach goes through a host copy.
// bf16 widening is exact; narrowing rounds to nearest even.
template <typename T> void load(const Tensor& t, T* out);
template <typename T> void store(Tensor& t, const T* in);
template <typename T> std::vector<T> to_vector(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  load(t, v.data());
  return v;
}

}  // namespace rcts
