// Scoped, exception-safe flags for "inside a checkpointed forward" and "inside a
// recompute" (Megatron's IS_CHECKPOINTING is a bare global an exception leaves set).
#pragma once

namespace rcts {

bool is_checkpointing();
bool is_recomputing();

class CheckpointingScope {
 public:
  CheckpointingScope();
  ~CheckpointingScope();
  CheckpointingScope(const CheckpointingScope&) = delete;
  CheckpointingScope& operator=(const CheckpointingScope&) = delete;

 private:
  bool previous_;
};

class RecomputingScope {
 public:
  RecomputingScope();
  ~RecomputingScope();
  RecomputingScope(const RecomputingScope&) = delete;
  RecomputingScope& operator=(const RecomputingScope&) = delete;

 private:
  bool previous_;
};

}  // namespace rcts
