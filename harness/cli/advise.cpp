#include "harness/cli/advise.hpp"
#include "harness/io/text_safety.hpp"

#include <cctype>
#include <iostream>
#include <limits>

#include "harness/cli/commands.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/error.hpp"
#include "reference/memory_model/advise.hpp"

namespace rcts {

int64_t parse_budget(const std::string& text) {
  auto bad = [&](const std::string& why) -> Error {
    return Error("--budget '" + text + "': " + why +
                 " (bytes with an optional unit: KiB, MiB, GiB, TiB = powers of 1024; KB, MB, GB, TB = powers of 1000)");
  };
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - digit) / 10) throw bad("too large");
    n = n * 10 + digit;
    ++i;
  }
  if (i == 0) throw bad("expected a number of bytes");
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::vector<std::pair<std::string, uint64_t>> units = {
      {"", 1},           {"b", 1},
      {"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30}, {"tib", 1ull << 40},
      {"kb", 1000ull},     {"mb", 1000000ull},  {"gb", 1000000000ull}, {"tb", 1000000000000ull}};
  for (const auto& [name, factor] : units)
    if (unit == name) {
      const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      if (n > limit / factor) throw bad("too large");
      if (n == 0) throw bad("must be positive");
      return static_cast<int64_t>(n * factor);
    }
  throw bad("unknown unit '" + text.substr(i) + "'");
}

Config apply_set_flags(const Config& base, const std::vector<std::string>& sets) {
  Config c = base;
  for (const auto& s : sets) {
    const std::string where = "--set " + s;
    const size_t eq = s.find('='), dot = s.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq || dot == 0 || dot + 1 == eq)
      throw Error(where + ": expected section.key=value, e.g. model.hidden_size=4096");
    const std::string section = s.substr(0, dot), key = s.substr(dot + 1, eq - dot - 1), text = s.substr(eq + 1);
    nlohmann::json value;
    try {
      value = harness::parse_json_text(text, where);
    } catch (const std::exception&) {
      value = text;  // a bare word: a string (model.activation=swiglu)
    }
    c = apply_overrides(c, nlohmann::json{{section, {{key, value}}}}, where);
  }
  return c;
}

int advise_command(const AdviseArgs& args, std::ostream& out) {
  if (args.budget.empty()) throw Error("rcts advise: --budget is required (per-rank bytes for activations, e.g. 60GiB)");
  const int64_t budget = parse_budget(args.budget);
  Config cfg = args.config_file.empty() ? Config{} : config_from_json(harness::read_json_file(args.config_file, "config file"),
                                                                       args.config_file);
  cfg = apply_set_flags(cfg, args.sets);
  const std::string where = args.config_file.empty() ? "the default config" : args.config_file;
  const Advice a = advise(cfg, budget, where);
  out << (args.json ? harness::json_text(advice_json(a), 2) + "\n" : advice_text(a));
  return a.recommended ? 0 : 1;
}

}  // namespace rcts

namespace rcts::harness::cli {

namespace {

class AdviseCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs&) override {
    sub = app.add_subcommand("advise", "list recompute settings with per-rank peak bytes, recompute FLOPs and fit");
    sub->add_option("--config", args_.config_file, "config JSON: model, parallel, run (default: built-in defaults)");
    sub->add_option("--set", args_.sets, "override a config field, e.g. --set model.num_layers=24 (repeatable)");
    sub->add_option("--budget", args_.budget, "per-rank bytes for activations, e.g. 60GiB")->required();
    sub->add_flag("--json", args_.json, "print JSON instead of the table");
  }
  bool needs_cases() const override { return false; }
  int run(Session&) override { return advise_command(args_, std::cout); }

 private:
  AdviseArgs args_;
};

}  // namespace

std::unique_ptr<Command> make_advise_command() { return std::make_unique<AdviseCommand>(); }

}  // namespace rcts::harness::cli
