// An exclusive lock on an output folder, held while a command writes into it: a second `tpsim sweep`
// (or `merge`) into the same folder is refused with a message instead of racing on its files.
#pragma once

#include <string>

namespace tpsim::cli {

class FolderLock {
 public:
  // Creates `dir` when missing and locks it (flock on the folder itself; released when the process
  // ends, however it ends). Throws InputError when another process holds it.
  explicit FolderLock(const std::string& dir);
  ~FolderLock();
  // The locked descriptor: a forked worker closes its copy, so that nothing it starts keeps the folder locked after
  // the command ends.
  int fd() const { return fd_; }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tpsim::cli
