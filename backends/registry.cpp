#include "backends/registry.hpp"

#include "backends/cpu/bodies_backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "reference/core/error.hpp"
#ifdef RCTS_HAVE_CUDA_BACKEND
#include "backends/cuda/cuda_backend.hpp"
#endif

namespace rcts {

namespace {
constexpr const char* kCudnnText =
    "CUDA fast tier with cuDNN's fused SDPA as model.flash_attention (bitwise within the tier on one GPU)";
}  // namespace

const std::vector<BackendEntry>& registered_backends() {
  static const std::vector<BackendEntry> entries = {
      {"cpu", "the reference: kernels/cpu on the widest instruction-set paths", "cpu", [] { return std::string(); },
       [] { return cpu::make_cpu_backend(); }},
      {"cpu-scalar", "kernels/cpu pinned to the portable GEMM and scalar element-wise loops (the CPU's bits)", "cpu",
       [] { return std::string(); }, [] { return cpu::make_cpu_scalar_backend(); }},
      {"cpu-exact", "the CUDA exact tier's per-output bodies run in host loops (the CPU's bits)", "cpu",
       [] { return std::string(); }, [] { return cpu::make_cpu_exact_backend(); }},
#ifdef RCTS_HAVE_CUDA_BACKEND
      {"cuda", "CUDA exact tier: the exact-tier bodies on the GPU (the CPU's bits)", "cpu",
       [] { return cuda::unavailable_reason(); }, [] { return cuda::make_cuda_backend(false); }},
      {"cuda-fast", "CUDA fast tier: pinned cuBLASLt GEMMs (bitwise within the tier on one GPU)", "cuda-fast",
       [] { return cuda::unavailable_reason(); }, [] { return cuda::make_cuda_backend(true); }},
      {"cuda-cudnn", kCudnnText, "cuda-cudnn", [] { return cuda::cudnn_unavailable_reason(); },
       [] { return cuda::make_cuda_cudnn_backend(); }},
#else
      {"cuda", "CUDA exact tier: the exact-tier bodies on the GPU (the CPU's bits)", "cpu",
       [] { return std::string("not built: configure with nvcc available (RCTS_WITH_CUDA=AUTO or ON)"); },
       []() -> std::unique_ptr<Backend> { throw Error("the CUDA backend is not built"); }},
      {"cuda-fast", "CUDA fast tier: pinned cuBLASLt GEMMs (bitwise within the tier on one GPU)", "cuda-fast",
       [] { return std::string("not built: configure with nvcc available (RCTS_WITH_CUDA=AUTO or ON)"); },
       []() -> std::unique_ptr<Backend> { throw Error("the CUDA backend is not built"); }},
      {"cuda-cudnn", kCudnnText, "cuda-cudnn",
       [] { return std::string("not built: configure with nvcc, cuDNN and the cudnn-frontend headers available"); },
       []() -> std::unique_ptr<Backend> { throw Error("the CUDA backend is not built"); }},
#endif
  };
  return entries;
}

const BackendEntry* find_backend(const std::string& name) {
  for (const auto& e : registered_backends())
    if (e.name == name) return &e;
  return nullptr;
}

std::string backend_names() {
  std::string s;
  for (const auto& e : registered_backends()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  const BackendEntry* e = find_backend(name);
  if (!e) throw Error("unknown backend '" + name + "' (known: " + backend_names() + ")");
  if (const std::string why = e->unavailable(); !why.empty())
    throw Error("backend '" + name + "' cannot run here: " + why);
  return e->make();
}

}  // namespace rcts
