// What regen-golden says about one golden file, in one line a reviewer can read:
// how many losses and side effects changed, with the largest absolute and
// ulp difference (exact: goldens hold their bits), and the changed tensors grouped by
// module with layer indices folded ("layers.*.mlp.fc1 8 of 10"). Goldens keep digests
// and summary stats of tensors, not their elements, so for tensors the line gives the
// largest change of a summary stat (min, max, mean, l2) instead of an element difference.
#pragma once
#include <cstdint>
#include <string>

#include "harness/golden/golden.hpp"

namespace rcts::harness {

// "losses 5 of 6 (max |d| 1.19e-07, 2 ulp f32); side effects 0 of 5; tensors 38 of 110:
// output 6 of 6, layers.*.mlp.fc1 8 of 10, ... (stats |d| <= 3.1e-05)"; "no change" when
// the two are the same.
std::string golden_review(const Golden& before, const Golden& after);

// The group a golden tensor is counted in: layer (and expert) indices become '*', the
// step/micro-batch tag and the parameter's weight/bias(.grad) suffix go:
// "layers.3.mlp.fc1.weight.grad" -> "layers.*.mlp.fc1", "output.step0.mb1" -> "output",
// "rank1/layers.0.attention.qkv.bias" -> "rank*/layers.*.attention.qkv".
std::string tensor_group(const std::string& name);

// Distance in units in the last place between two doubles given as bits, measured in
// float when both are floats widened to double (the losses of f32/bf16 runs), else in
// double; `unit` says which ("f32" or "f64").
uint64_t loss_ulp(uint64_t a_bits, uint64_t b_bits, std::string& unit);

}  // namespace rcts::harness
