#include "reference/recompute/checkpoint_state.hpp"

namespace rcts {

namespace {
thread_local bool checkpointing = false;
thread_local bool recomputing = false;
}  // namespace

bool is_checkpointing() { return checkpointing; }
bool is_recomputing() { return recomputing; }

CheckpointingScope::CheckpointingScope() : previous_(checkpointing) { checkpointing = true; }
CheckpointingScope::~CheckpointingScope() { checkpointing = previous_; }

RecomputingScope::RecomputingScope() : previous_(recomputing) { recomputing = true; }
RecomputingScope::~RecomputingScope() { recomputing = previous_; }

}  // namespace rcts
