// The factory of each subcommand (one per file under harness/cli/).
#pragma once
#include <memory>

#include "harness/cli/command.hpp"

namespace rcts::harness::cli {

std::unique_ptr<Command> make_run_command();
std::unique_ptr<Command> make_merge_reports_command();
std::unique_ptr<Command> make_check_command();
std::unique_ptr<Command> make_checks_command();
std::unique_ptr<Command> make_list_command();
std::unique_ptr<Command> make_explain_command();
std::unique_ptr<Command> make_memory_command();
std::unique_ptr<Command> make_advise_command();
std::unique_ptr<Command> make_regen_golden_command();
std::unique_ptr<Command> make_mutants_command();
std::unique_ptr<Command> make_block_command();
std::unique_ptr<Command> make_matrix_command();

}  // namespace rcts::harness::cli
