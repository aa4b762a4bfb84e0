// cuBLASLt is loaded on first use, not linked (backends/cuda/lt_api.hpp): these run
// without a GPU. Loading resolves every entry point; a library that cannot be loaded, or
// lacks a symbol, is an rcts::Error naming it.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/lt_api.hpp"
#include "reference/core/error.hpp"

namespace rcts {
namespace {

TEST(CublasLtLoad, EveryEntryPointResolvesFromTheConfiguredLibrary) {
  const cuda::LtApi& api = cuda::lt_api();
#define RCTS_EXPECT_RESOLVED(name) EXPECT_NE(api.name, nullptr) << "cublasLt" #name;
  RCTS_CUBLASLT_FUNCTIONS(RCTS_EXPECT_RESOLVED)
#undef RCTS_EXPECT_RESOLVED
  EXPECT_NE(api.library.find("cublasLt"), std::string::npos) << api.library;
  EXPECT_GE(api.GetVersion(), size_t{120000});  // needs no device
}

TEST(CublasLtLoad, AMissingLibraryIsAnErrorNamingIt) {
  try {
    (void)cuda::load_lt_api("/nonexistent/libcublasLt.so.13");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load /nonexistent/libcublasLt.so.13"), std::string::npos) << e.what();
  }
}

TEST(CublasLtLoad, ALibraryWithoutTheSymbolsIsAnErrorNamingTheFirstMissing) {
  try {
    (void)cuda::load_lt_api("libc.so.6");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("libc.so.6 has no symbol cublasLtCreate"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rcts
