// Compute-type dispatch: ops compute in f32 (f64 in gradcheck runs, when
// activations are f64) and round their outputs to the activation dtype. ComputeIn /
// ComputeOut give an op compute-type pointers for its tensors, converting through the
// backend (Backend::convert) only where the tensor holds another dtype.
#pragma once
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/runtime/runtime.hpp"

namespace rcts {

template <typename F> decltype(auto) with_compute_type(bool gradcheck, F&& f) {
  if (gradcheck) return f.template operator()<double>();
  return f.template operator()<float>();
}

// Parameters are stored in the compute type already: read them without a copy.
template <typename T> const T* param_data(const Tensor& p) { return p.data<T>(); }
template <typename T> T* param_data(Tensor& p) { return p.data<T>(); }

}  // namespace rcts

namespace rcts {

// Read-only compute-type view of a tensor: its own bytes when it already holds T
// (f32 activations in an f32 run), else a converted copy in workspace scratch. Saves
// a copy per operand on the hot path; the values are identical either way.
template <typename T> class ComputeIn {
 public:
  ComputeIn(Runtime& rt, const Tensor& t) : n_(static_cast<size_t>(t.numel())) {
    if (t.dtype() == dtype_of<T>()) {
      p_ = t.data<T>();
    } else {
      copy_ = rt.workspace.take<T>(n_);
      rt.backend.convert(copy_.data(), dtype_of<T>(), t.bytes(), t.dtype(), t.numel());
      p_ = copy_.data();
    }
  }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  Workspace::Buffer<T> copy_;
  const T* p_ = nullptr;
  size_t n_ = 0;
};

// Compute-type output buffer for a tensor: writes straight into its bytes when it
// holds T, else into workspace scratch that commit() rounds into the tensor.
template <typename T> class ComputeOut {
 public:
  ComputeOut(Runtime& rt, Tensor& t) : rt_(rt), t_(t), n_(static_cast<size_t>(t.numel())) {
    if (t.dtype() == dtype_of<T>()) {
      p_ = t.data<T>();
    } else {
      copy_ = rt.workspace.take<T>(n_);
      p_ = copy_.data();
    }
  }
  T* data() { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_[i]; }
  void commit() {
    if (copy_.size() != 0) rt_.backend.convert(t_.bytes(), t_.dtype(), copy_.data(), dtype_of<T>(), t_.numel());
  }

 private:
  Runtime& rt_;
  Tensor& t_;
  Workspace::Buffer<T> copy_;
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace rcts
