// Size-capped reads of regular input files through POSIX calls (their errors are named, never thrown
// as std::filesystem errors).
#include "base/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/input_error.hpp"

namespace tpsim {
namespace {

std::string open_problem(int error) {
  switch (error) {
    case ENOENT:
      return "no such file";
    case ENAMETOOLONG:
      return "the path is longer than the system allows (a name of at most 255 bytes, a path of at most 4095)";
    case ENOTDIR:
      return "a component of the path is not a folder";
    case EACCES:
      return "permission denied";
    default:
      return std::strerror(error);
  }
}

// Closes the descriptor however the read ends.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string byte_count_text(int64_t bytes) {
  constexpr int64_t kGiB = int64_t{1} << 30, kMiB = int64_t{1} << 20;
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes,
                            const std::string& advice) {
  const std::string where = echo_path(path) + ": ";
  // The path reaches reports (JSON, traces) as the input's name: it must be text.
  if (escape_controls(path) != path) {
    throw InputError(where + "the path holds control characters or bytes that are not UTF-8; rename the file");
  }
  // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused.
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(where + "cannot open the " + what + " file: " + open_problem(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw InputError(where + "not a regular file (a folder, FIFO or device); give the " + what + " file itself");
  }
  const std::string limit = "over tpsim's limit of " + byte_count_text(max_bytes) + " for a " + what +
                            " file (docs/reliability.md)" + (advice.empty() ? "" : "; " + advice);
  if (st.st_size > max_bytes) throw InputError(where + byte_count_text(st.st_size) + ", " + limit);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t used = 0;
  while (true) {
    if (used == bytes.size()) {
      if (static_cast<int64_t>(bytes.size()) > max_bytes) throw InputError(where + "grew while read, " + limit);
      bytes.resize(bytes.size() + 65536);  // a file that grows while read
    }
    const ssize_t n = ::read(fd.get(), bytes.data() + used, bytes.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(where + "read failed: " + std::strerror(errno));
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (static_cast<int64_t>(used) > max_bytes) throw InputError(where + "grew while read, " + limit);
  bytes.resize(used);
  return bytes;
}

std::string resolve_relative(const std::string& scenario_file, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(scenario_file).parent_path() / p).lexically_normal().string();
}

}  // namespace tpsim
