// The files and directories one command reads and writes, and the rule that keeps its
// outputs off its inputs and off each other (docs/cli.md "Inputs and outputs"): every
// command lists its uses (Command::path_uses) and main.cpp refuses a clash before
// anything is read or written, so `rcts run C --json C` can never destroy C.
#pragma once
#include <string>
#include <vector>

namespace rcts::harness::cli {

struct PathUse {
  enum class Kind {
    input,       // a file read, or a directory read with what lies below it
    output,      // a file written (replaced whole)
    output_dir,  // a directory written (replaced or filled whole: --dump, --report, the golden set)
  };
  Kind kind = Kind::input;
  std::string what;  // the option or argument that names it: "--json", "case path", "--expect"
  std::string path;  // as given; empty: not used
};

// Throws rcts::Error naming both uses when, after resolving symlinks and "..":
//   an output is an input or another output (same path, or the same file by inode);
//   an output lies inside an input directory (the command reads what lies there);
//   an output directory holds an input, or lies inside or holds another output directory.
// Devices and FIFOs (/dev/null, /dev/stdout) may be named by any number of outputs:
// writing them destroys nothing.
void refuse_path_clashes(const std::vector<PathUse>& uses);

}  // namespace rcts::harness::cli
