// FolderLock: flock(LOCK_EX | LOCK_NB) on a descriptor of the folder.
#include "cli/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/input_error.hpp"

namespace tpsim::cli {

FolderLock::FolderLock(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw InputError(echo_path(dir) + ": cannot create the output folder: " + error.message());
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(echo_path(dir) + ": cannot open the output folder: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int lock_error = errno;
    ::close(fd_);
    fd_ = -1;
    if (lock_error == EWOULDBLOCK) {
      throw InputError(echo_path(dir) +
                       ": another tpsim sweep or merge is writing into this folder; wait for it to end, or use "
                       "another --out");
    }
    throw InputError(echo_path(dir) + ": cannot lock the output folder: " + std::strerror(lock_error));
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace tpsim::cli
