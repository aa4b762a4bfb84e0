// The CPU backend: the reference kernels of kernels/cpu behind the backend interface
// (docs/design.md §11). Memory is the host heap for every domain (device budgets are
// the MemoryTracker's business); copy streams are worker threads.
//
// A kernel table says which instruction-set path each kernel family runs. "cpu" lets
// each family pick the widest path the machine has (or what a test forced with
// set_*_path); "cpu-scalar" pins the portable GEMM and the scalar element-wise loops.
// Both must give the same bits — that is the kernels' contract — so "cpu-scalar"
// shares the golden files of "cpu", and running the case set on it proves the seam is
// the only way from the modules to the kernels.
#pragma once
#include <memory>
#include <string>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/vec_path.hpp"
#include "reference/backend/backend.hpp"

namespace rcts::cpu {

struct KernelPaths {
  GemmPath gemm = GemmPath::automatic;
  VecPath activation = VecPath::automatic;
  VecPath dropout = VecPath::automatic;
  VecPath softmax = VecPath::automatic;
};

// `golden_name` names the backend whose golden files this configuration reproduces.
std::unique_ptr<Backend> make_backend(std::string name, KernelPaths paths, std::string golden_name);

// "cpu": the widest paths.
std::unique_ptr<Backend> make_cpu_backend();
// "cpu-scalar": portable GEMM, scalar activations, dropout mask and softmax.
std::unique_ptr<Backend> make_cpu_scalar_backend();

// A process-wide "cpu" backend for tests and tools that need one without choosing.
Backend& default_backend();

}  // namespace rcts::cpu
