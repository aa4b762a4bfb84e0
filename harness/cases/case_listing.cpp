// `rcts list --tsv`: one line per case (see case_listing.hpp).
#include "harness/cases/case_listing.hpp"

#include "reference/core/error.hpp"

namespace rcts::harness {

std::string case_tsv_line(const Case& c) {
  const std::string file = c.file.string();
  // CTest's discovery splits the line on tabs and its lists on ';'.
  if (file.find_first_of("\t\n;") != std::string::npos)
    throw Error(file + ": a case file name with a tab, newline or ';' cannot be listed for CTest");
  std::string line = c.id;
  line += '\t';
  line += file;
  line += '\t';
  for (size_t i = 0; i < c.ranks.size(); ++i) {
    if (i) line += ',';
    line += std::to_string(c.ranks[i]);
  }
  line += '\t';
  for (size_t i = 0; i < c.backends.size(); ++i) {
    if (i) line += ',';
    line += c.backends[i];
  }
  line += c.expect.golden ? "\t1" : "\t0";
  return line;
}

}  // namespace rcts::harness
