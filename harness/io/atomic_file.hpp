// Checked, all-or-nothing file writes: the one way rcts writes an output (goldens,
// JSON and JUnit reports, dumps). Bytes go to a temporary file beside the target;
// only when every write, the flush and the close succeeded is it renamed over the
// target, so a reader sees the old file or the whole new one, never a truncated one.
// On failure the temporary file is removed and rcts::Error names the path and the OS
// error (e.g. "No space left on device").
//
// Targets that are not regular files (/dev/stdout, /dev/full, a FIFO) cannot be
// renamed over: they are written in place, every write checked, so `--json /dev/full`
// fails like a full disk does.
//
// Test hook: when RCTS_TEST_FAIL_WRITE is set, a write whose target path contains its
// value fails half-way with ENOSPC, as a disk filling up mid-write would.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace rcts::harness {

class AtomicFile {
 public:
  // What a symlink at the target means: the file it names is replaced (outputs the user
  // may point anywhere), or the link itself is (a staging file such as FILE.new, which
  // a planted link must never redirect); with `replace` a device or FIFO is refused.
  enum class Symlinks { follow, replace };

  // Opens the temporary file beside `target` (or `target` itself when it exists and
  // is not a regular file). Symlinks are followed: the file they name is replaced.
  // `durable`: fsync before the rename (goldens), so a crash cannot leave an empty file.
  // `sweep`: first remove what killed writers on this host left beside the target
  // (sweep_leftovers); off for files in a fresh staging directory.
  explicit AtomicFile(std::filesystem::path target, bool durable = false, bool sweep = true,
                      Symlinks symlinks = Symlinks::follow);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // Flushes and closes, checking both; the target is not touched yet. Idempotent.
  void close();
  // close(), then renames the temporary file over the target.
  void commit();

  const std::filesystem::path& target() const { return target_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  std::filesystem::path target_;
  std::filesystem::path temp_;  // empty when writing in place
  int fd_ = -1;
  bool durable_ = false;
  bool committed_ = false;
  bool failed_ = false;
  std::filesystem::path final_;  // what the rename replaces: target_ with symlinks resolved
  bool inject_ = false;          // RCTS_TEST_FAIL_WRITE matched target_
};

// Writes `content` to `path` through AtomicFile.
void write_file_atomic(const std::filesystem::path& path, std::string_view content, bool durable = false,
                       bool sweep = true);
// A staging file (FILE.new beside an input): created exclusively beside the path and
// renamed over it, so a symlink, device or FIFO planted there is replaced or refused,
// never written through.
void write_staging_file(const std::filesystem::path& path, std::string_view content);

// Hidden siblings: a temporary file or directory beside `target` is named
// ".<name>.<tag>-<host>-<pid>-XXXXXX", so that a later writer of the same target can
// tell what a killed process (kill -9, power loss) left behind from what a live one
// is writing. sweep_leftovers removes those of this host whose process is gone.
std::string hidden_sibling_prefix(const std::filesystem::path& target, const std::string& tag);
void sweep_leftovers(const std::filesystem::path& target, const std::string& tag);
// A new empty directory named as above (mkdtemp). Throws rcts::Error starting with `what`.
std::filesystem::path make_sibling_dir(const std::filesystem::path& target, const std::string& tag,
                                       const std::string& what);

// Puts directory `from` at `to` in one step, so `to` is never missing nor half of
// each: rename(2) when `to` is absent or empty; when it holds something, an exchange
// (renameat2 RENAME_EXCHANGE) if `replace`, which leaves the old contents at `from`
// for the caller to remove, else ENOTEMPTY. Returns 0 or the errno.
int put_directory(const std::filesystem::path& from, const std::filesystem::path& to, bool replace,
                  bool& exchanged);

}  // namespace rcts::harness
