// refuse_path_clashes: paths compared after resolving them (weakly_canonical), files
// also by device and inode, so a symlink or a hard link cannot hide a clash.
#include "harness/cli/path_uses.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <optional>

#include "reference/core/error.hpp"

namespace rcts::harness::cli {

namespace fs = std::filesystem;

namespace {

struct Resolved {
  const PathUse* use;
  fs::path path;                // absolute, symlinks and ".." resolved as far as it exists
  std::optional<struct stat> st;  // when it exists
};

bool is_output(const PathUse& u) { return u.kind != PathUse::Kind::input; }

// `inner` lies strictly below `outer`.
bool lies_inside(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin(), o = outer.begin();
  for (; o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return i != inner.end();
}

bool same_file(const Resolved& a, const Resolved& b) {
  if (a.path == b.path) return true;
  return a.st && b.st && a.st->st_dev == b.st->st_dev && a.st->st_ino == b.st->st_ino;
}

std::string named(const Resolved& r) { return r.use->what + " " + r.use->path; }

}  // namespace

void refuse_path_clashes(const std::vector<PathUse>& uses) {
  std::vector<Resolved> all;
  for (const auto& u : uses) {
    if (u.path.empty()) continue;
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(u.path, ec), ec);
    if (ec) p = fs::absolute(u.path).lexically_normal();
    Resolved r{&u, p, std::nullopt};
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;  // a device or FIFO: destroys nothing
      r.st = st;
    }
    all.push_back(std::move(r));
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const Resolved& a = all[i];
    if (!is_output(*a.use)) continue;
    for (size_t j = 0; j < all.size(); ++j) {
      if (i == j) continue;
      const Resolved& b = all[j];
      const bool a_dir = a.use->kind == PathUse::Kind::output_dir, b_dir = b.use->kind == PathUse::Kind::output_dir;
      const bool b_input = !is_output(*b.use);
      if (same_file(a, b)) {
        if (b_input)
          throw Error(named(a) + ": it is also the input " + named(b) + " (" + a.path.string() +
                      "): refusing to overwrite an input; name another output");
        if (i < j)
          throw Error(named(a) + " and " + named(b) + " are the same file (" + a.path.string() +
                      "): each output needs a path of its own");
        continue;
      }
      if (b_input && lies_inside(a.path, b.path))
        throw Error(named(a) + ": it lies inside the input directory " + named(b) +
                    ", which this command reads: write it elsewhere");
      if (a_dir && lies_inside(b.path, a.path) && (b_input || b_dir))
        throw Error(named(a) + ": this directory is written whole, and it holds " +
                    (b_input ? "the input " : "the output ") + named(b) + ": name a directory of its own");
    }
  }
}

}  // namespace rcts::harness::cli
