// Compute-type dispatch: ops compute in f32 (f64 in gradcheck runs, when
// activations are f64) and round their outputs to the activation dtype.
#pragma once
#include <vector>

#include "reference/core/tensor.hpp"

namespace rcts {

template <typename F> decltype(auto) with_compute_type(bool gradcheck, F&& f) {
  if (gradcheck) return f.template operator()<double>();
  return f.template operator()<float>();
}

// Parameters are stored in the compute type already: read them without a copy.
template <typename T> const T* param_data(const Tensor& p) { return p.data<T>(); }
template <typename T> T* param_data(Tensor& p) { return p.data<T>(); }

}  // namespace rcts
