// Full-recompute plans (design §6). A plan splits the stage's layers
// into segments; a checkpointed segment stores only its input. Segments index the
// stage's layers from 0 (its first layer, global index stage_layers().first), so
// `block` N counts from each stage's first layer (design §16).
//   uniform N: [0,N) [N,2N) ... the last truncated (16 layers, N=5 ->
//              [0,5) [5,10) [10,15) [15,16)), every segment checkpointed;
//   block N:   layers 0..N-1 checkpointed one by one, the rest store everything;
//   otherwise (no full recompute, or eval): one plain segment per layer.
#pragma once
#include <string>
#include <vector>

#include "reference/config/config.hpp"
#include "reference/config/pipeline_stage.hpp"

namespace rcts {

struct Segment {
  int begin = 0;
  int end = 0;  // exclusive
  bool checkpointed = false;
  bool operator==(const Segment&) const = default;
};

std::vector<Segment> recompute_plan(const Config& c, int pp_rank = 0);
std::string plan_str(const std::vector<Segment>& plan);  // "[0,5)* [5,10)* [10,11)"

}  // namespace rcts
