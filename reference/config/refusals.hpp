// What the reference refuses to run ("feature.not_implemented"), one table: each
// combination a config can name but the reference does not model, whether Megatron-LM
// trains it (and the Megatron-LM file that does) and why the reference cannot model it.
// check_supported() emits one issue per entry a config uses; the unit test
// tests/config/refusals_test.cpp reads the same table, so an entry without a reason, a
// Megatron-LM file or a config that triggers it fails there.
//
// Not in this table: the Supported flags (features the reference implements that a
// caller may switch off, e.g. the fused attention on a backend without one).
#pragma once
#include <string>
#include <vector>

#include "reference/config/config.hpp"

namespace rcts {

struct Refusal {
  const char* id;                   // stable key, e.g. "pp.fp8"
  std::vector<std::string> fields;  // the config fields that make the combination (first: the error's path)
  bool (*uses)(const Config&);      // whether a config uses the combination
  std::string (*what)(const Config&);  // the combination, naming the config's values
  // The Megatron-LM file that trains the combination ("megatron/core/..."), or nullptr
  // when Megatron-LM does not.
  const char* megatron_file;
  const char* why;                  // why the reference does not model it
};

const std::vector<Refusal>& refusals();

}  // namespace rcts
