// Saved bytes counted once per (storage, offset) (reference/core/saved_bytes.hpp): the
// rule every per-tensor, per-module and per-layer sum of a save log follows.
#include <gtest/gtest.h>

#include "reference/core/saved_bytes.hpp"

namespace rcts {
namespace {

SaveRecord save(const std::string& module, const std::string& tensor, int64_t bytes, uint64_t storage, int64_t offset,
                bool recompute = false) {
  SaveRecord r;
  r.module_path = module;
  r.tensor = tensor;
  r.bytes = bytes;
  r.storage_id = storage;
  r.offset = offset;
  r.recompute = recompute;
  return r;
}

int64_t total(const std::vector<const SaveRecord*>& v) {
  int64_t b = 0;
  for (const SaveRecord* s : v) b += s->bytes;
  return b;
}

TEST(SavedBytes, EachStorageAndOffsetCountsOnceAndRecomputeSavesNotAtAll) {
  const std::vector<SaveRecord> log = {
      save("layers.0.attention", "q", 100, 7, 0),
      save("layers.0.attention", "k", 100, 7, 100),       // another view of the same storage
      save("layers.0.attention", "q_again", 100, 7, 0),   // the same view under another name
      save("layers.0.mlp", "fc1_in", 50, 9, 0),
      save("layers.0.mlp", "fc1_in", 50, 11, 0, true),    // saved by a recompute
      save("layers.1.mlp", "fc1_in", 50, 9, 0),           // layer 1 saves layer 0's storage again
  };
  const auto all = distinct_forward_saves(log);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]->tensor, "q");
  EXPECT_EQ(all[1]->tensor, "k");
  EXPECT_EQ(all[2]->module_path, "layers.0.mlp");
  EXPECT_EQ(total(all), 250);
  // A prefix selects before storages are counted: layer 1's save of storage 9 is its own.
  EXPECT_EQ(total(distinct_forward_saves(log, "layers.1.")), 50);
  EXPECT_EQ(total(distinct_forward_saves(log, "layers.0.")), 250);
  EXPECT_TRUE(distinct_forward_saves(log, "layers.2.").empty());
}

}  // namespace
}  // namespace rcts
