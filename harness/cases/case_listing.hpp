// Machine-readable case listing for scripts (`rcts list --tsv`): what CTest's
// test-time discovery (tests/cases/discover_cases.cmake.in) needs to register one
// test per case and world size without parsing case files itself.
#pragma once
#include <string>

#include "harness/cases/case.hpp"

namespace rcts::harness {

// "<id>\t<file>\t<world sizes, comma-separated>\t<backends, comma-separated>\t<1 if the
// case keeps a golden file, else 0>". Ids, backends and world sizes never hold a tab or
// a comma (case.cpp validates them); a file name with a tab, newline or ';' is refused.
std::string case_tsv_line(const Case& c);

}  // namespace rcts::harness
