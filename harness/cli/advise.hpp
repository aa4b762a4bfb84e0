// `rcts advise`: reads the model and layout (a config file, then `--set section.key=value`
// overrides, each checked like the file) and the per-rank budget, and prints the
// recompute advisor's table or JSON (reference/memory_model/advise.hpp). Bad input is an
// rcts::Error naming the file or flag, the JSON path and the value.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "reference/config/config.hpp"

namespace rcts {

struct AdviseArgs {
  std::string config_file;          // "" = built-in defaults
  std::vector<std::string> sets;    // "model.hidden_size=4096" (value as JSON; a bare word is a string)
  std::string budget;               // bytes, optional unit: KiB MiB GiB TiB (1024) or KB MB GB TB (1000)
  bool json = false;
};

// Bytes of a budget such as "80GiB" or "1500000"; throws rcts::Error naming --budget.
int64_t parse_budget(const std::string& text);
// `base` with every --set applied in order; throws ConfigError naming the flag.
Config apply_set_flags(const Config& base, const std::vector<std::string>& sets);
// Prints the advice; returns 0 when some candidate fits, 1 when none does.
int advise_command(const AdviseArgs& args, std::ostream& out);

}  // namespace rcts
