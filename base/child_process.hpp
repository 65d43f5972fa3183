// Worker processes of the sweep and the plan: a forked child that writes lines to a pipe and dies with its parent.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace tpsim {

// A running child: its process id and the read end of the pipe it writes to.
struct ChildProcess {
  pid_t pid = -1;
  int fd = -1;
};

// Forks a child that runs `body` with the write end of a pipe, then exits 0 (`body` may also end the child itself).
// The child dies with the parent (an orphan would keep what it inherited, such as a folder's lock, held), and closes
// `inherited_fd` first when it is not -1. Throws std::runtime_error when the pipe or the fork fails.
ChildProcess fork_child(const std::function<void(int write_fd)>& body, int inherited_fd = -1);

// Writes all of `text` to `fd` from a child; a child whose parent stopped reading exits with status 4.
void write_or_exit(int fd, const std::string& text);

// Waits for `child` and closes its pipe; returns its wait status.
int reap_child(const ChildProcess& child);

// Whether a wait status is an exit with status 0.
bool exited_cleanly(int status);

// " (signal 9)" for a child a signal ended, else "".
std::string signal_note(int status);

}  // namespace tpsim
