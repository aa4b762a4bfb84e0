// Path selection of the vectorised element-wise kernels (vec_path.hpp): automatic picks
// the widest path the CPU has, a forced path sticks, a path the CPU lacks is refused
// with the family named, and each family chooses on its own.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/dropout.hpp"
#include "kernels/cpu/softmax.hpp"
#include "kernels/cpu/vec_path.hpp"

namespace rcts::cpu {
namespace {

TEST(VecPath, AutomaticPicksTheWidestSupported) {
  VecPathChoice choice("test");
  const VecPath want = vec_path_supported(VecPath::avx512) ? VecPath::avx512
                       : vec_path_supported(VecPath::avx2) ? VecPath::avx2
                                                           : VecPath::sse2;
  EXPECT_EQ(choice.active(), want);
  EXPECT_TRUE(vec_path_supported(VecPath::scalar));
  EXPECT_TRUE(vec_path_supported(VecPath::sse2));
  if (vec_path_supported(VecPath::avx512)) {
    EXPECT_TRUE(vec_path_supported(VecPath::avx2));
  }
}

TEST(VecPath, ForcedPathSticksAndUnsupportedIsRefused) {
  VecPathChoice choice("family-x");
  choice.set(VecPath::scalar);
  EXPECT_EQ(choice.active(), VecPath::scalar);
  for (VecPath p : {VecPath::avx2, VecPath::avx512}) {
    if (vec_path_supported(p)) continue;
    try {
      choice.set(p);
      ADD_FAILURE() << "set(" << vec_path_name(p) << ") accepted on a CPU without it";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("family-x"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(vec_path_name(p)), std::string::npos) << e.what();
    }
    EXPECT_EQ(choice.active(), VecPath::scalar);
  }
  choice.set(VecPath::automatic);
  EXPECT_NE(choice.active(), VecPath::automatic);
}

TEST(VecPath, FamiliesChooseIndependently) {
  set_activation_path(VecPath::scalar);
  set_dropout_path(VecPath::sse2);
  set_softmax_path(VecPath::automatic);
  EXPECT_EQ(active_activation_path(), VecPath::scalar);
  EXPECT_EQ(active_dropout_path(), VecPath::sse2);
  EXPECT_NE(active_softmax_path(), VecPath::automatic);
  set_activation_path(VecPath::automatic);
  set_dropout_path(VecPath::automatic);
  EXPECT_EQ(active_activation_path(), active_softmax_path());
  EXPECT_EQ(active_dropout_path(), active_softmax_path());
}

}  // namespace
}  // namespace rcts::cpu
