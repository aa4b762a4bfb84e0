// The subcommands of `rcts`, in the order its help lists them. Adding one is a file
// under harness/cli/ and a line here.
#include "harness/cli/command.hpp"
#include "harness/cli/commands.hpp"

namespace rcts::harness::cli {

std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> c;
  c.push_back(make_run_command());
  c.push_back(make_merge_reports_command());
  c.push_back(make_check_command());
  c.push_back(make_checks_command());
  c.push_back(make_list_command());
  c.push_back(make_explain_command());
  c.push_back(make_memory_command());
  c.push_back(make_advise_command());
  c.push_back(make_regen_golden_command());
  c.push_back(make_mutants_command());
  c.push_back(make_block_command());
  c.push_back(make_matrix_command());
  return c;
}

}  // namespace rcts::harness::cli
