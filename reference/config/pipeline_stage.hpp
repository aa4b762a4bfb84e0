// Which layers a pipeline stage owns (design §16). model.num_layers is the whole
// model, as Megatron-LM's --num-layers: with pp stages (num_layers % pp == 0, rule
// pipeline.num_layers_divisible) stage p holds layers [p·L/pp, (p+1)·L/pp) under
// their GLOBAL indices, so parameter names ("layers.3.mlp.fc1.weight") and their
// values are those of the pp = 1 run of the same model.
#pragma once
#include "reference/config/config.hpp"

namespace rcts {

struct StageLayers {
  int first = 0;  // global index of the stage's first layer
  int count = 0;  // layers of the stage
};

inline int layers_per_stage(const Config& c) {
  const int pp = c.parallel.pipeline_model_parallel_size;
  return pp >= 1 ? c.model.num_layers / pp : c.model.num_layers;
}

inline StageLayers stage_layers(const Config& c, int pp_rank) {
  const int n = layers_per_stage(c);
  return {pp_rank * n, n};
}

}  // namespace rcts
