// AtomicFile: temporary file + rename on POSIX, every call's status checked.
#include "harness/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reference/core/error.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

AtomicFile::AtomicFile(fs::path target, bool durable) : target_(std::move(target)), durable_(durable) {
  if (const char* v = std::getenv("RCTS_TEST_FAIL_WRITE"); v && *v && target_.string().find(v) != std::string::npos)
    inject_ = true;
  std::error_code ec;
  final_ = target_;
  if (fs::is_symlink(target_, ec))
    if (auto real = fs::canonical(target_, ec); !ec) final_ = real;
  const auto st = fs::status(final_, ec);
  if (fs::is_directory(st)) fail("it is a directory", EISDIR);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or FIFO: nothing to rename over, write it in place.
    fd_ = ::open(final_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open it", errno);
    return;
  }
  const fs::path dir = final_.has_parent_path() ? final_.parent_path() : fs::path(".");
  const std::string name = (dir / std::string(".").append(final_.filename().string()).append(".tmp-XXXXXX")).string();
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

void write_file_atomic(const fs::path& path, std::string_view content, bool durable) {
  AtomicFile f(path, durable);
  f.write(content);
  f.commit();
}

}  // namespace rcts::harness
