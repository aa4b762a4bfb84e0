// The fuzz entry: one input through the same parsing code the rcts CLI uses for case
// files (`rcts run`) and config files (`rcts memory --config`, `rcts block --config`),
// up to the point where a run would start: strict JSON, case schema, config
// schema and variants, validation, the memory model and the run estimate.
// Bad input must end in an rcts::Error, which the entry swallows; any other
// exception, a crash or a sanitizer report is a finding.
#pragma once
#include <string_view>

namespace rcts::fuzz {

void parse_input(std::string_view data);

}  // namespace rcts::fuzz

namespace rcts::fuzz {

// The dump reader of `rcts check` (harness/dumps/dump_v1.hpp, npy.hpp) on one input: the
// text before the first line "--npy--" is written as a dump's dump.json, the bytes after
// it as every tensor file the manifest names (at most 64), and the dump is read back;
// the bytes after it also go through the npy header parser alone. Bad input must end in
// an rcts::Error.
void parse_dump_input(std::string_view data);

}  // namespace rcts::fuzz
