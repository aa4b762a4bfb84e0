// The run most unit tests make: one config end to end on the reference CPU backend, rank
// 0 of a world of one. Tests that need another backend, rank coordinates or options call
// execute() themselves.
#pragma once
#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::test_support {

inline RunRecord run_cpu(const Config& c) { return execute(c, cpu::default_backend()); }

}  // namespace rcts::test_support
