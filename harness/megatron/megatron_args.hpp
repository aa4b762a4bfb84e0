// Megatron-LM settings pasted as they are: an argument list
// ("--num-layers 24 --hidden-size 1024 ... --recompute-modules core_attn mlp"), a file of
// them (a launch script's argument lines) or YAML (flat `num_layers: 24` or Megatron's
// `MODEL_ARGS:` mapping), mapped to an rcts Config with Megatron-LM's defaults
// (docs/megatron.md: the mapping, the defaults and where Megatron-LM defines them).
//
// Promises: every problem of the input is reported at once in one MegatronArgsError
// (unknown arguments with the closest known name, bad values, settings rcts does not
// model, missing required sizes, then every config rule); arguments that do not change
// what rcts models (optimizer, data, logging, checkpointing, ...) are listed as ignored,
// never silently dropped.
#pragma once
#include <string>
#include <vector>

#include "reference/config/config.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

// One argument as written: its name ("--num-layers") and its values (none for a flag).
struct MegatronArg {
  std::string name;
  std::vector<std::string> values;
};

struct MegatronImport {
  Config config;
  std::vector<std::string> ignored;  // argument names that rcts does not model and need not
  std::vector<std::string> notes;    // defaults taken or adjustments made, as Megatron-LM makes them
};

class MegatronArgsError : public Error {
 public:
  MegatronArgsError(const std::string& where, std::vector<std::string> problems,
                    SourceLocation loc = SourceLocation::current());
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Splits a shell-like argument text: whitespace separates, '…' and "…" quote, a
// backslash-newline continues a line, '#' starts a comment; "--name=value" is split.
// Words before the first "--name" or not starting with "--" where a name is due are
// reported as problems.
std::vector<MegatronArg> split_megatron_args(const std::string& text, std::vector<std::string>& problems);
// A YAML document (file text): a mapping of argument names ("--num-layers", "num-layers"
// or "num_layers") to scalars or lists; true is a flag given, false a flag not given.
// A top-level MODEL_ARGS mapping (Megatron-LM's functional-test configs) is used alone.
std::vector<MegatronArg> megatron_args_from_yaml(const std::string& text, const std::string& where,
                                                 std::vector<std::string>& problems);

// Maps arguments to a config; throws MegatronArgsError listing every problem (including
// those already in `problems`). `where` names the source in messages.
MegatronImport import_megatron_args(const std::vector<MegatronArg>& args, const std::string& where,
                                    std::vector<std::string> problems = {});
// The three entry points of `rcts memory`: an argument string, or a file (YAML when it
// ends in .yaml / .yml, else argument text).
MegatronImport import_megatron_arg_string(const std::string& text);
MegatronImport import_megatron_file(const std::string& path);

}  // namespace rcts::harness
