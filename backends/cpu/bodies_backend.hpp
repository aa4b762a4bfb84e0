// "cpu-exact": the exact-tier bodies (kernels/exact) run on the host in plain loops,
// one call per output, OpenMP over outputs. It is what the CUDA exact tier computes,
// thread for thread, so the whole case set on this backend tests the exact tier's
// arithmetic on any machine; it shares (and must reproduce) the CPU's golden files.
#pragma once
#include <memory>

#include "reference/backend/backend.hpp"

namespace rcts::cpu {

std::unique_ptr<Backend> make_cpu_exact_backend();

}  // namespace rcts::cpu
