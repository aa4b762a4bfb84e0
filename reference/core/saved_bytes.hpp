// Saved bytes, counted once (design §3, §4): the forward saves of a save log whose key
// (module path and tensor name) starts with `prefix`, each (storage, offset) taken
// once, so a tensor saved under two names, or q, k and v saved as three views of one
// storage, holds its bytes once. The one rule wherever saved
// bytes are summed per tensor, module or layer from a save log (rcts block, the
// --report pages, the saved-bytes tests).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reference/core/save_context.hpp"

namespace rcts {

inline std::vector<const SaveRecord*> distinct_forward_saves(const std::vector<SaveRecord>& log,
                                                             const std::string& prefix = "") {
  std::vector<const SaveRecord*> out;
  std::set<std::pair<uint64_t, int64_t>> seen;
  for (const auto& s : log)
    if (s.key().rfind(prefix, 0) == 0 && !s.recompute && seen.insert({s.storage_id, s.offset}).second)
      out.push_back(&s);
  return out;
}

}  // namespace rcts
