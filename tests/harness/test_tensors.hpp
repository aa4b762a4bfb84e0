// Small helpers for harness tests: untracked host tensors filled from values or bits,
// and a scratch directory removed at the end of the test.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "reference/core/tensor.hpp"

namespace rcts::harness::testing {

inline Tensor make_tensor(const Shape& shape, DType dtype, const std::string& name) {
  return Tensor::empty(shape, dtype, Placement{nullptr, Domain::host, Category::activation}, name);
}

template <typename T> Tensor tensor_of(const Shape& shape, const std::vector<T>& values, const std::string& name) {
  Tensor t = make_tensor(shape, dtype_of<T>(), name);
  if (!values.empty()) std::memcpy(t.data<T>(), values.data(), values.size() * sizeof(T));  // memcpy(_, nullptr, 0) is UB
  return t;
}

class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("rcts_harness_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace rcts::harness::testing
