#include "backends/cuda/lt_api.hpp"

#include <dlfcn.h>

#include "reference/core/error.hpp"

#ifndef RCTS_CUBLASLT_FILE
#define RCTS_CUBLASLT_FILE "libcublasLt.so"
#endif

namespace rcts::cuda {

LtApi load_lt_api(const std::string& library) {
  // RTLD_LOCAL: its symbols serve only these pointers; RTLD_NOW: a broken install fails
  // here, with the library's name, not at the first GEMM.
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    throw Error("cuBLASLt: cannot load " + library + ": " + (why ? why : "unknown dlopen error"));
  }
  LtApi api;
  api.library = library;
#define RCTS_LT_RESOLVE(name)                                                                        \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(h, "cublasLt" #name));                       \
  if (!api.name) throw Error("cuBLASLt: " + library + " has no symbol cublasLt" #name);
  RCTS_CUBLASLT_FUNCTIONS(RCTS_LT_RESOLVE)
#undef RCTS_LT_RESOLVE
  return api;
}

const LtApi& lt_api() {
  static const LtApi api = load_lt_api(RCTS_CUBLASLT_FILE);  // a throw leaves it unset: retried
  return api;
}

}  // namespace rcts::cuda
