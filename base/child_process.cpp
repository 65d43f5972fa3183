// Worker processes: fork with a pipe, parent-death signal, full writes and the reaping of a child.
#include "base/child_process.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace tpsim {

ChildProcess fork_child(const std::function<void(int write_fd)>& body, int inherited_fd) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  // What the parent buffered would otherwise be written twice, once by each process.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // The getppid check covers a parent gone before prctl.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(5);
    if (inherited_fd != -1) ::close(inherited_fd);
    ::close(fds[0]);
    body(fds[1]);
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  return ChildProcess{pid, fds[0]};
}

void write_or_exit(int fd, const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(4);
    written += static_cast<size_t>(n);
  }
}

int reap_child(const ChildProcess& child) {
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  ::close(child.fd);
  return status;
}

bool exited_cleanly(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string signal_note(int status) {
  return WIFSIGNALED(status) ? " (signal " + std::to_string(WTERMSIG(status)) + ")" : std::string();
}

}  // namespace tpsim
