// AtomicFile: temporary file + rename on POSIX, every call's status checked.
#include "harness/io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reference/core/error.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

std::string hidden_sibling_prefix(const fs::path& target, const std::string& tag) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string h = host;
  for (char& c : h)
    if (c == '/' || c == '-') c = '_';
  return "." + target.filename().string() + "." + tag + "-" + h + "-";
}

void sweep_leftovers(const fs::path& target, const std::string& tag) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = hidden_sibling_prefix(target, tag);
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
}

fs::path make_sibling_dir(const fs::path& target, const std::string& tag, const std::string& what) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string name =
      (dir / (hidden_sibling_prefix(target, tag) + std::to_string(::getpid()) + "-XXXXXX")).string();
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw Error(what + ": cannot create a directory beside it: " + std::strerror(errno));
  return buf.data();
}

int put_directory(const fs::path& from, const fs::path& to, bool replace, bool& exchanged) {
  exchanged = false;
  if (::rename(from.c_str(), to.c_str()) == 0) return 0;  // `to` absent or an empty directory
  if (errno != ENOTEMPTY && errno != EEXIST) return errno;
  if (!replace) return ENOTEMPTY;
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) != 0) return errno;
  exchanged = true;
  return 0;
}

AtomicFile::AtomicFile(fs::path target, bool durable, bool sweep, Symlinks symlinks)
    : target_(std::move(target)), durable_(durable) {
  if (const char* v = std::getenv("RCTS_TEST_FAIL_WRITE"); v && *v && target_.string().find(v) != std::string::npos)
    inject_ = true;
  std::error_code ec;
  final_ = target_;
  if (symlinks == Symlinks::follow && fs::is_symlink(target_, ec))
    if (auto real = fs::canonical(target_, ec); !ec) final_ = real;
  const auto st = symlinks == Symlinks::follow ? fs::status(final_, ec) : fs::symlink_status(final_, ec);
  if (fs::is_directory(st)) fail("it is a directory", EISDIR);
  if (symlinks == Symlinks::replace && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_symlink(st))
    fail("it is not a regular file", EEXIST);
  if (symlinks == Symlinks::follow && fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or FIFO: nothing to rename over, write it in place.
    fd_ = ::open(final_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open it", errno);
    return;
  }
  const fs::path dir = final_.has_parent_path() ? final_.parent_path() : fs::path(".");
  if (sweep) sweep_leftovers(final_, "tmp");
  const std::string name = (dir / (hidden_sibling_prefix(final_, "tmp") + std::to_string(::getpid()) + "-XXXXXX")).string();
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  fd_ = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd_ < 0) fail("cannot create a temporary file in " + dir.string(), errno);
  temp_ = buf.data();
  // mkostemp creates 0600; give the file the target's mode, or what the umask allows.
  mode_t mode = 0;
  if (fs::is_regular_file(st)) {
    struct stat old {};
    mode = ::stat(final_.c_str(), &old) == 0 ? old.st_mode & 07777 : 0644;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd_, mode) != 0) fail("cannot set the mode of " + temp_.string(), errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  failed_ = true;
  throw Error("cannot write " + target_.string() + ": " + what + ": " + std::strerror(err) +
              (inject_ ? " (injected by RCTS_TEST_FAIL_WRITE)" : ""));
}

void AtomicFile::write(const void* data, size_t n) {
  RCTS_CHECK(!failed_ && fd_ >= 0, "AtomicFile " + target_.string() + ": write after close or failure");
  const auto* p = static_cast<const char*>(data);
  size_t left = n;
  if (inject_) left = n / 2;
  while (left > 0) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write failed", w < 0 ? errno : EIO);
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (inject_) fail("write failed", ENOSPC);
}

void AtomicFile::close() {
  RCTS_CHECK(!failed_, "AtomicFile " + target_.string() + ": an earlier write failed");
  if (fd_ < 0) return;
  if (inject_) fail("write failed", ENOSPC);
  // Devices and FIFOs cannot be synced (EINVAL); only the temporary file needs it.
  if (durable_ && !temp_.empty() && ::fsync(fd_) != 0) fail("fsync failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed", errno);
}

void AtomicFile::commit() {
  close();
  if (committed_) return;
  if (!temp_.empty() && ::rename(temp_.c_str(), final_.c_str()) != 0)
    fail("cannot rename " + temp_.string() + " over it", errno);
  committed_ = true;
}

void write_file_atomic(const fs::path& path, std::string_view content, bool durable, bool sweep) {
  AtomicFile f(path, durable, sweep);
  f.write(content);
  f.commit();
}

void write_staging_file(const fs::path& path, std::string_view content) {
  AtomicFile f(path, /*durable=*/false, /*sweep=*/true, AtomicFile::Symlinks::replace);
  f.write(content);
  f.commit();
}

}  // namespace rcts::harness
