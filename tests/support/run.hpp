// The run most unit tests make: one config end to end on the reference CPU backend, rank
// 0 of a world of one. Tests that need another backend, rank coordinates or options call
// execute() themselves.
#pragma once
#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::test_support {

inline RunRecord run_cpu(const Config& c) { return execute(c, cpu::default_backend()); }

// The same run with every tensor recorded (ExecuteOptions::record_all): what a dump writes.
inline RunRecord run_cpu_recorded(const Config& c) {
  ExecuteOptions eo;
  eo.record_all = true;
  return execute(c, cpu::default_backend(), {}, nullptr, eo);
}

}  // namespace rcts::test_support
