// Output files through POSIX calls: symbolic links resolved, non-regular targets written through,
// regular ones replaced atomically (mkstemp in the same folder, then rename), several at once all or none.
#include "base/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/input_error.hpp"

namespace tpsim {
namespace {

constexpr int kMaxLinkHops = 40;  // as the kernel's ELOOP

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The file a chain of symbolic links at `path` ends at (`path` itself when it is no link).
std::string link_target(const std::string& path) {
  std::string target = path;
  struct stat st {};
  for (int hops = 0; ::lstat(target.c_str(), &st) == 0 && S_ISLNK(st.st_mode); ++hops) {
    if (hops == kMaxLinkHops) throw InputError(echo_path(path) + ": too many levels of symbolic links");
    std::string next(4096, '\0');
    const ssize_t n = ::readlink(target.c_str(), next.data(), next.size());
    if (n < 0 || static_cast<size_t>(n) == next.size()) {
      throw InputError(echo_path(path) + ": cannot read the symbolic link: " + std::strerror(errno));
    }
    next.resize(static_cast<size_t>(n));
    target = next.front() == '/' ? next : folder_of(target) + "/" + next;
  }
  return target;
}

[[noreturn]] void write_failed(const std::string& path, const std::string& what) {
  throw InputError(echo_path(path) + ": " + what + ": " + std::strerror(errno));
}

// Writes everything to `fd`; returns false (errno set) on failure.
bool write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    content.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void write_through(const std::string& path, const std::string& target, std::string_view content) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) write_failed(path, "cannot open for writing");
  const bool written = write_all(fd, content);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (!written) write_failed(path, "write failed");
}

// The mode a new file gets (0666 less the umask), or an existing file's own mode.
mode_t mode_for(const struct stat* existing) {
  if (existing) return existing->st_mode & 07777;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// The content of one output, written beside its target but not yet in place (a regular or new file), or held to be
// written through (a FIFO or device).
struct Staged {
  std::string path;       // as given (messages name it)
  std::string target;     // the file a chain of links at `path` ends at
  std::string temporary;  // the staged copy beside `target`; empty: written through at commit
  std::string_view content;
};

// Writes `content` to a new temporary file beside `target`, with the mode `existing` has (or a new file's).
std::string stage_beside(const std::string& path, const std::string& target, const struct stat* existing,
                         std::string_view content) {
  std::string temporary = target + ".XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) write_failed(path, "cannot write here (check the folder exists and is writable)");
  bool written = write_all(fd, content) && ::fchmod(fd, mode_for(existing)) == 0;
  int error = written ? 0 : errno;
  if (::close(fd) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) {
    ::unlink(temporary.c_str());
    errno = error;
    write_failed(path, "write failed");
  }
  return temporary;
}

Staged stage(const std::string& path, std::string_view content) {
  if (path.empty()) throw InputError("an output path is empty; give a file name");
  Staged staged{path, link_target(path), "", content};
  struct stat st {};
  const bool exists = ::stat(staged.target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw InputError(echo_path(path) + ": is a folder; give a file path");
  if (!exists || S_ISREG(st.st_mode)) {
    staged.temporary = stage_beside(path, staged.target, exists ? &st : nullptr, content);
  }
  return staged;
}

void remove_staged(const std::vector<Staged>& staged) {
  for (const Staged& s : staged) {
    if (!s.temporary.empty()) ::unlink(s.temporary.c_str());
  }
}

}  // namespace

void write_output_files(const std::vector<std::pair<std::string, std::string_view>>& outputs,
                        const std::function<void()>& before_placing) {
  std::vector<Staged> staged;
  try {
    for (const auto& [path, content] : outputs) staged.push_back(stage(path, content));
    for (const Staged& s : staged) {
      if (s.temporary.empty()) write_through(s.path, s.target, s.content);
    }
    if (before_placing) before_placing();
  } catch (...) {
    remove_staged(staged);
    throw;
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    const Staged& s = staged[i];
    if (s.temporary.empty() || ::rename(s.temporary.c_str(), s.target.c_str()) == 0) continue;
    const int rename_error = errno;
    remove_staged(std::vector<Staged>(staged.begin() + static_cast<std::ptrdiff_t>(i), staged.end()));
    errno = rename_error;
    write_failed(s.path, "cannot replace the file");
  }
}

void write_output_file(const std::string& path, std::string_view content) {
  write_output_files({{path, content}});
}

}  // namespace tpsim
