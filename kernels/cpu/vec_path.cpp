#include "kernels/cpu/vec_path.hpp"

#include <stdexcept>
#include <string>

#include "kernels/cpu/cpu_features.hpp"

namespace rcts::cpu {

bool vec_path_supported(VecPath p) {
  switch (p) {
    case VecPath::avx2: return cpu_has_avx2_fma();
    case VecPath::avx512: return cpu_has_avx512();
    default: return true;
  }
}

const char* vec_path_name(VecPath p) {
  switch (p) {
    case VecPath::automatic: return "automatic";
    case VecPath::scalar: return "scalar";
    case VecPath::sse2: return "sse2";
    case VecPath::avx2: return "avx2";
    case VecPath::avx512: return "avx512";
  }
  return "?";
}

void VecPathChoice::set(VecPath p) {
  if (!vec_path_supported(p))
    throw std::runtime_error(std::string(family_) + ": this CPU cannot run the " + vec_path_name(p) + " path");
  path_.store(p, std::memory_order_relaxed);
}

VecPath VecPathChoice::resolve(VecPath requested) const {
  if (requested == VecPath::automatic) return active();
  if (!vec_path_supported(requested))
    throw std::runtime_error(std::string(family_) + ": this CPU cannot run the " + vec_path_name(requested) + " path");
  return requested;
}

VecPath VecPathChoice::active() const {
  const VecPath p = path_.load(std::memory_order_relaxed);
  if (p != VecPath::automatic) return p;
  if (vec_path_supported(VecPath::avx512)) return VecPath::avx512;
  if (vec_path_supported(VecPath::avx2)) return VecPath::avx2;
  return VecPath::sse2;
}

}  // namespace rcts::cpu
