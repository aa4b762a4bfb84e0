// Strings between the ranks of a multi-rank run: the one collective the harness's
// own exchanges (results, golden sections, replica digests) are built on.
#pragma once
#include <string>
#include <vector>

#include "reference/parallel/communicator.hpp"

namespace rcts::harness {

// Every rank's string, in rank order, on every rank.
std::vector<std::string> all_gather_strings(Communicator& world, const std::string& mine);

}  // namespace rcts::harness
