// SaveContext and saved-tensor hooks: saving re-tags storage, saved tensors are found
// by name, disabled contexts save nothing, hooks pack/unpack in scope order, records
// name module and tensor, stash keys carry their type.
#include <gtest/gtest.h>

#include "reference/core/save_context.hpp"

namespace rcts {
namespace {

TEST(SaveContext, SaveRecordsAndRetags) {
  MemoryTracker m;
  SaveLog log;
  SaveContext root("", &log);
  SaveContext& attn = root.child("layers.0").child("attention");
  Tensor q = Tensor::empty({2, 4}, DType::bf16, {&m, Domain::device, Category::activation}, "q");
  attn.save(q, "q");
  EXPECT_EQ(attn.load("q").storage(), q.storage());
  EXPECT_TRUE(attn.has_saved("q"));
  EXPECT_FALSE(attn.has_saved("k"));
  ASSERT_EQ(log.records().size(), 1u);
  EXPECT_EQ(log.records()[0].key(), "layers.0.attention.q");
  EXPECT_EQ(log.records()[0].bytes, 16);
  EXPECT_EQ(m.category(Domain::device, Category::saved_activation).current, 16);
  // The same child is found again (backward looks it up by name).
  EXPECT_EQ(&root.child("layers.0").child("attention"), &attn);
  // '#' children keep the parent's path.
  EXPECT_EQ(attn.child("#core").path(), "layers.0.attention");
}

TEST(SaveContext, NoGradContextSavesNothingAndLoadFails) {
  SaveLog log;
  SaveContext root("x", &log);
  SaveContext& ng = root.child_no_grad("#nograd");
  MemoryTracker m;
  Tensor t = Tensor::empty({2}, DType::f32, {&m, Domain::device, Category::activation}, "t");
  ng.save(t, "t");
  EXPECT_FALSE(ng.has_saved("t"));
  EXPECT_TRUE(log.records().empty());
  EXPECT_EQ(m.category(Domain::device, Category::saved_activation).current, 0);
  EXPECT_THROW(ng.load("t"), Error);
  // Children of a no-grad context are no-grad too; a recompute child saves.
  EXPECT_FALSE(ng.child("sub").enabled());
  EXPECT_TRUE(ng.child_for_recompute("#recompute").enabled());
}

struct CountingHooks final : SavedTensorHooks {
  int packs = 0, unpacks = 0;
  PackedTensor pack(const Tensor& t, const SaveInfo& info) override {
    ++packs;
    PackedTensor p;
    p.tag = std::string(info.module_path + ":" + info.tensor);
    p.tensor = t;  // a real offload would keep a host copy instead
    return p;
  }
  Tensor unpack(PackedTensor& p) override {
    ++unpacks;
    return p.tensor;
  }
};

TEST(SavedTensorHooks, InnermostHooksPackAndThePackerUnpacks) {
  MemoryTracker m;
  Tensor t = Tensor::empty({2}, DType::f32, {&m, Domain::device, Category::activation}, "t");
  SaveContext ctx("m", nullptr);
  CountingHooks outer, inner;
  {
    SavedTensorHooksScope s1(outer);
    ctx.save(t, "a");
    {
      SavedTensorHooksScope s2(inner);
      ctx.save(t, "b");
    }
  }
  EXPECT_EQ(current_saved_tensor_hooks(), nullptr);
  EXPECT_EQ(outer.packs, 1);
  EXPECT_EQ(inner.packs, 1);
  ctx.load("b");
  EXPECT_EQ(inner.unpacks, 1);
  EXPECT_EQ(outer.unpacks, 0);
  ctx.load("a");
  EXPECT_EQ(outer.unpacks, 1);
}

TEST(SaveContext, ClearDropsSavedTensorsAndFreesMemory) {
  MemoryTracker m;
  SaveContext ctx("m", nullptr);
  {
    Tensor t = Tensor::empty({8}, DType::f32, {&m, Domain::device, Category::activation}, "t");
    ctx.child("c").save(t, "t");
  }
  EXPECT_EQ(m.domain(Domain::device).current, 32);
  ctx.clear();
  EXPECT_EQ(m.domain(Domain::device).current, 0);
}

TEST(SaveContext, NamesAreUniqueAndAMissingNameSaysWhatIsHeld) {
  MemoryTracker m;
  SaveContext ctx("layers.0.mlp.fc1", nullptr);
  Tensor t = Tensor::empty({2}, DType::f32, {&m, Domain::device, Category::activation}, "t");
  ctx.save(t, "input");
  // A second save under one name would silently shadow the first: refused.
  EXPECT_THROW(ctx.save(t, "input"), Error);
  try {
    ctx.load("inptu");
    FAIL() << "a missing name must throw";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("layers.0.mlp.fc1"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'inptu'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("holds: input"), std::string::npos) << e.message();
  }
}

TEST(SaveContext, StashKeysCarryTheirType) {
  constexpr StashKey<std::vector<int>> kPlan{"plan"};
  constexpr StashKey<double> kScale{"scale"};
  SaveContext ctx("m", nullptr);
  EXPECT_FALSE(ctx.has_stash(kPlan));
  ctx.stash(kPlan, std::vector<int>{3, 1});
  ctx.stash(kScale, 0.5);
  EXPECT_TRUE(ctx.has_stash(kPlan));
  EXPECT_EQ(ctx.stashed(kPlan), (std::vector<int>{3, 1}));
  ctx.stashed(kPlan).push_back(4);  // a reference to the stored value
  EXPECT_EQ(ctx.stashed(kPlan).size(), 3u);
  EXPECT_EQ(ctx.stashed(kScale), 0.5);
  ctx.clear();
  EXPECT_THROW(ctx.stashed(kScale), Error);
}

}  // namespace
}  // namespace rcts
