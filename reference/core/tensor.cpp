#include "reference/core/tensor.hpp"

#include <cstring>
#include <sstream>

namespace rcts {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

Tensor Tensor::create(const Shape& shape, DType dtype, const Placement& where, std::string name, bool zero) {
  for (auto d : shape)
    RCTS_CHECK(d >= 0, "tensor '" + name + "': negative dimension in shape " + shape_str(shape));
  Tensor t;
  t.storage_ = Storage::allocate(where.tracker, where.memory ? *where.memory : host_memory(), where.domain,
                                 where.category,
                                 shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype)), name, zero);
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.name_ = std::move(name);
  return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, const Placement& where, std::string name) {
  return create(shape, dtype, where, std::move(name), true);
}

Tensor Tensor::uninitialized(const Shape& shape, DType dtype, const Placement& where, std::string name) {
  return create(shape, dtype, where, std::move(name), false);
}

const std::byte* Tensor::bytes() const {
  return storage_->data(name_) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

Tensor Tensor::view(const Shape& shape, std::string name) const {
  RCTS_CHECK(shape_numel(shape) == numel(), "view of tensor '" + name_ + "' " + shape_str(shape_) +
                                                " as " + shape_str(shape) + " changes the element count");
  Tensor t = *this;
  t.shape_ = shape;
  if (!name.empty()) t.name_ = std::move(name);
  return t;
}

Tensor Tensor::clone(const Placement& where, std::string name) const {
  Tensor t = Tensor::uninitialized(shape_, dtype_, where, name.empty() ? name_ : std::move(name));
  t.copy_from(*this);
  return t;
}

void Tensor::fill_bytes(uint8_t value) {
  std::byte* p = bytes();
  storage_->memory().fill(storage_->domain(), p, value, nbytes());
}

void Tensor::copy_from(const Tensor& src) {
  RCTS_CHECK(src.nbytes() == nbytes(), "copy into tensor '" + name_ + "' (" + std::to_string(nbytes()) +
                                           " bytes) from '" + src.name() + "' (" + std::to_string(src.nbytes()) +
                                           " bytes)");
  if (nbytes() == 0) return;
  copy_bytes(bytes(), *storage_, src.bytes(), *src.storage(), nbytes());
}

void Tensor::write_from_host(const void* src) {
  std::byte* p = bytes();
  storage_->memory().copy(p, storage_->domain(), static_cast<const std::byte*>(src), Domain::host, nbytes());
}

void Tensor::read_to_host(void* dst) const {
  const std::byte* p = bytes();
  storage_->memory().copy(static_cast<std::byte*>(dst), Domain::host, p, storage_->domain(), nbytes());
}

Tensor Tensor::rows(int64_t begin, int64_t end, std::string name) const {
  RCTS_CHECK(!shape_.empty() && 0 <= begin && begin <= end && end <= shape_[0],
             "rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of range for tensor '" +
                 name_ + "' " + shape_str(shape_));
  Tensor t = *this;
  const int64_t row = shape_[0] ? numel() / shape_[0] : 0;
  t.offset_ += begin * row;
  t.shape_[0] = end - begin;
  if (!name.empty()) t.name_ = std::move(name);
  return t;
}

void Tensor::check_dtype(DType want) const {
  RCTS_CHECK(storage_, "tensor '" + name_ + "' is undefined");
  RCTS_CHECK(want == dtype_, "tensor '" + name_ + "' has dtype " + std::string(dtype_name(dtype_)) +
                                 ", accessed as " + std::string(dtype_name(want)));
}

namespace {
// Element-wise, so threads (splitting elements) never change a bit.
constexpr int64_t kConvertParallelMin = int64_t{1} << 16;

template <typename T, typename S> void convert_load(const S* src, T* dst, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kConvertParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<S, bf16>) dst[i] = static_cast<T>(from_bf16(src[i]));
    else dst[i] = static_cast<T>(src[i]);
  }
}
template <typename T, typename S> void convert_store(const T* src, S* dst, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kConvertParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<S, bf16>) dst[i] = to_bf16(static_cast<float>(src[i]));
    else dst[i] = static_cast<S>(src[i]);
  }
}
}  // namespace

// Note: f64 -> bf16 rounds through f32 (double rounding); rcts never stores f64
// compute results as bf16 (gradcheck runs use f64 activations), so this is unused.
template <typename T> void load(const Tensor& source, T* out) {
  const Tensor t = source.host_accessible() ? source : source.clone(host_placement());
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::f64: convert_load(t.data<double>(), out, n); break;
    case DType::f32: convert_load(t.data<float>(), out, n); break;
    case DType::bf16: convert_load(t.data<bf16>(), out, n); break;
    case DType::u8: convert_load(t.data<uint8_t>(), out, n); break;
    case DType::i32: convert_load(t.data<int32_t>(), out, n); break;
    case DType::i64: convert_load(t.data<int64_t>(), out, n); break;
  }
}

template <typename T> void store(Tensor& target, const T* in) {
  if (!target.host_accessible()) {
    Tensor staging = Tensor::uninitialized(target.shape(), target.dtype(), host_placement(), target.name());
    store(staging, in);
    target.copy_from(staging);
    return;
  }
  Tensor& t = target;
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::f64: convert_store(in, t.data<double>(), n); break;
    case DType::f32: convert_store(in, t.data<float>(), n); break;
    case DType::bf16: convert_store(in, t.data<bf16>(), n); break;
    case DType::u8: convert_store(in, t.data<uint8_t>(), n); break;
    case DType::i32: convert_store(in, t.data<int32_t>(), n); break;
    case DType::i64: convert_store(in, t.data<int64_t>(), n); break;
  }
}

template void load<float>(const Tensor&, float*);
template void load<double>(const Tensor&, double*);
template void store<float>(Tensor&, const float*);
template void store<double>(Tensor&, const double*);

}  // namespace rcts
