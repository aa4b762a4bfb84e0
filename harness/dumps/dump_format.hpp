// What the writer (dump_write.cpp) and the reader (dump_read*.cpp) of dump format 1 share,
// so that each rule is written once: the manifest's fixed strings, the stem a
// micro-batch's tensors are named by, and the layout a mask kind is stored in.
#pragma once
#include <string>

namespace rcts::harness::dump_detail {

inline constexpr const char* kFormat = "rcts-dump";
inline constexpr const char* kSeedOffset = "seed-offset";
inline constexpr const char* kOpaque = "opaque";
inline constexpr const char* kRctsMaskRule = "rcts-philox4x32-10";
inline constexpr const char* kNoMaskRule = "none";

// "s<step>.mb<micro-batch>": the file stem of a micro-batch's tensors, and the name the
// reader gives them.
inline std::string mb_stem(int step, int mb) { return "s" + std::to_string(step) + ".mb" + std::to_string(mb); }

// The "layout" of a mask of kind attention, hidden or expert (docs/dump-format.md, Layouts).
inline std::string mask_layout(const std::string& kind) {
  return kind == "attention" ? "attention_mask" : kind == "hidden" ? "hidden_mask" : "rows";
}

}  // namespace rcts::harness::dump_detail
