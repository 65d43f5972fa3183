// Worker processes for a plan's candidates: sharing by program key, one JSON line per candidate, progress.
#include "plan/plan_workers.hpp"

#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "base/child_process.hpp"

namespace tpsim::plan {

class ProgressLine {
 public:
  ProgressLine(size_t total, bool enabled)
      : total_(total), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}
  void step() {
    ++done_;
    if (!enabled_) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = done_ / std::max(elapsed, 1e-9);
    std::fprintf(stderr, "\rplan: simulated %zu/%zu candidates, %.1f per s, about %.0f s left   ", done_, total_, rate,
                 static_cast<double>(total_ - done_) / rate);
    std::fflush(stderr);
  }
  void finish() const {
    if (enabled_ && done_ > 0) std::fprintf(stderr, "\n");
  }

 private:
  size_t total_, done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

namespace {

using Json = nlohmann::ordered_json;

// What follows a first-run job's number on its command line (command_of).
constexpr const char* kFirstRunMark = " first";

// A worker's heap kept rather than handed back to the system at each free: big blocks (a program's ops, a timeline's
// spans) from the heap up to 32 MiB, not from mappings made and unmade for each; no trimming as blocks are freed, and
// the heap grown 64 MiB at a time. A worker re-used each page many times faulting it in again after every candidate.
// The sizes are settings, not measurements: 32 MiB holds the largest programs' op vectors and timelines of the shipped
// plans; a 1 GiB trim threshold never trims in practice; chosen on the 70B plan, where they took a run's page faults
// from 1.45M to 0.97M at -j 1.
void keep_heap() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_TOP_PAD, 64 << 20);
}

// Simulates one candidate and writes its line.
void simulate_one(int fd, size_t index, bool first_run, const SimulateJob& simulate, sim::SimulationCache& cache,
                  bool forks) {
  Json message;
  message["index"] = index;
  try {
    message["row"] = simulate(index, first_run, cache);
  } catch (const std::exception& error) {
    message["error"] = error.what();
  }
  write_or_exit(fd, message.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
  // The candidate's run is freed: its heap pages go back to the system, so that each later simulation's fork copies
  // no page tables for them (a worker that forks none keeps them).
  if (forks) ::malloc_trim(0);
}

void write_cache_counts(int fd, const sim::SimulationCache& cache) {
  Json end;
  end["cache"] = {{"hits", cache.stats().hits}, {"misses", cache.stats().misses}, {"saved_s", cache.stats().saved_s}};
  write_or_exit(fd, end.dump() + "\n");
}

// A worker: simulates its candidates in order, one JSON line each, then its cache's counts.
void run_worker(int fd, const std::vector<size_t>& mine, const SimulateJob& simulate, const WorkerOptions& options) {
  keep_heap();
  sim::SimulationCache cache;
  if (options.cache) cache.install();
  for (size_t index : mine) simulate_one(fd, index, false, simulate, cache, options.forks);
  write_cache_counts(fd, cache);
}

// A pool's worker: simulates the candidates whose numbers arrive on `commands`, one line each, until it closes.
void run_pool_worker(int fd, int commands, const SimulateJob& simulate, const WorkerOptions& options) {
  keep_heap();
  sim::SimulationCache cache;
  if (options.cache) cache.install();
  std::string buffer;
  for (;;) {
    size_t end = buffer.find('\n');
    while (end == std::string::npos) {
      char chunk[4096];
      const ssize_t n = ::read(commands, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_cache_counts(fd, cache);
        return;
      }
      buffer.append(chunk, static_cast<size_t>(n));
      end = buffer.find('\n');
    }
    const std::string line = buffer.substr(0, end);
    buffer.erase(0, end + 1);
    simulate_one(fd, std::stoul(line), line.find(kFirstRunMark) != std::string::npos, simulate, cache, options.forks);
  }
}

// The line that hands `job` to a pool's worker: its number, marked for a first-run job.
std::string command_of(const WorkerJob& job) {
  return std::to_string(job.index) + (job.first_run ? kFirstRunMark : "") + "\n";
}

// One round of reading the live workers' pipes (both kinds: each with process, buffer and done): every whole line
// to on_line(worker, line), a closed pipe to on_end(worker, exit status) once the child is reaped.
template <typename W, typename OnLine, typename OnEnd>
void read_round(std::vector<W>& workers, const OnLine& on_line, const OnEnd& on_end) {
  std::vector<pollfd> fds;
  for (const W& w : workers) fds.push_back(pollfd{w.done ? -1 : w.process.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
    throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    W& w = workers[i];
    if (w.done || fds[i].revents == 0) continue;
    char buffer[65536];
    const ssize_t n = ::read(w.process.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      w.buffer.append(buffer, static_cast<size_t>(n));
      for (size_t end; (end = w.buffer.find('\n')) != std::string::npos;) {
        const std::string line = w.buffer.substr(0, end);
        w.buffer.erase(0, end + 1);
        on_line(w, line);
      }
      continue;
    }
    const int status = reap_child(w.process);
    w.done = true;
    on_end(w, status);
  }
}

struct Worker {
  ChildProcess process;
  std::string buffer;
  bool done = false;
};

// Handles one complete line of a worker; whether it was a candidate's.
bool take_line(const std::string& line, const TakeJob& take, WorkerCounts& counts, ProgressLine& progress) {
  const Json message = Json::parse(line);
  if (message.contains("cache")) {
    counts.cache_hits += message["cache"]["hits"].get<int64_t>();
    counts.cache_misses += message["cache"]["misses"].get<int64_t>();
    counts.cache_saved_s += message["cache"]["saved_s"].get<double>();
    return false;
  }
  const size_t index = message["index"];
  // The progress line counts candidates simulated, not their first runs.
  if (!message.contains("row") || !message["row"].contains(kFirstRunBound)) progress.step();
  if (message.contains("error")) {
    take(index, nullptr, message["error"].get<std::string>());
    return true;
  }
  take(index, &message["row"], "");
  return true;
}

// The jobs' indexes dealt over `workers`: jobs sharing programs to the same worker, next to each other.
std::vector<std::vector<size_t>> shares_of(const std::vector<WorkerJob>& jobs, size_t workers) {
  std::vector<const WorkerJob*> sorted;
  for (const WorkerJob& job : jobs) sorted.push_back(&job);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const WorkerJob* a, const WorkerJob* b) { return a->program_key < b->program_key; });
  std::vector<std::vector<size_t>> shares(workers);
  size_t group = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0 && sorted[i]->program_key != sorted[i - 1]->program_key) ++group;
    shares[group % workers].push_back(sorted[i]->index);
  }
  return shares;
}

}  // namespace

WorkerCounts simulate_in_workers(const std::vector<WorkerJob>& jobs, const WorkerOptions& options,
                                 const SimulateJob& simulate, const TakeJob& take) {
  WorkerCounts counts;
  ProgressLine progress(jobs.size(), options.progress);
  std::vector<Worker> workers;
  for (const auto& share : shares_of(jobs, static_cast<size_t>(std::max(1, options.jobs)))) {
    if (share.empty()) continue;
    workers.push_back(Worker{fork_child([&](int fd) { run_worker(fd, share, simulate, options); }), {}, false});
  }
  size_t open = workers.size();
  while (open > 0) {
    read_round(
        workers, [&](Worker&, const std::string& line) { take_line(line, take, counts, progress); },
        [&](Worker&, int status) {
          --open;
          if (!exited_cleanly(status)) counts.crashes.push_back("a worker process crashed" + signal_note(status));
        });
  }
  progress.finish();
  return counts;
}

struct WorkerPool::Member {
  ChildProcess process;
  int commands = -1;  // the write end of its command pipe (-1: closed)
  std::string buffer;
  bool done = false;
  size_t pending = 0;  // jobs sent and not yet taken
};

WorkerPool::WorkerPool(const WorkerOptions& options, const SimulateJob& simulate, size_t total)
    : options_(options), progress_(std::make_unique<ProgressLine>(total, options.progress)) {
  // A worker that died leaves its command pipe without a reader: the write fails (EPIPE) instead of killing the parent.
  sigpipe_ = std::signal(SIGPIPE, SIG_IGN);
  const size_t workers = std::min(total, static_cast<size_t>(std::max(1, options.jobs)));
  for (size_t i = 0; i < workers; ++i) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    std::vector<int> others;  // the earlier workers' command pipes, which only the parent may hold open
    for (const Member& m : members_) others.push_back(m.commands);
    const int read_end = pipe_fds[0];
    Member m;
    m.process = fork_child(
        [&](int fd) {
          for (const int other : others) ::close(other);
          run_pool_worker(fd, read_end, simulate, options);
        },
        pipe_fds[1]);
    ::close(read_end);
    m.commands = pipe_fds[1];
    members_.push_back(std::move(m));
  }
}

WorkerPool::~WorkerPool() {
  if (finished_) return;
  try {
    finish();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor ends the workers quietly
  }
}

void WorkerPool::drain(const TakeJob& take, const std::function<bool()>& done,
                       const std::function<void(Member&)>& took) {
  while (!done()) {
    read_round(
        members_,
        [&](Member& m, const std::string& line) {
          if (!take_line(line, take, counts_, *progress_)) return;
          --m.pending;
          if (took) took(m);
        },
        [&](Member& m, int status) {
          m.pending = 0;  // a crashed worker's jobs are lost with it (counted as a crash)
          if (m.commands >= 0) ::close(m.commands), m.commands = -1;
          if (!exited_cleanly(status)) counts_.crashes.push_back("a worker process crashed" + signal_note(status));
        });
  }
}

void WorkerPool::run(const std::vector<WorkerJob>& batch, const TakeJob& take) {
  std::vector<size_t> live;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].done) live.push_back(i);
  }
  if (live.empty()) return;
  const size_t share = (batch.size() + live.size() - 1) / live.size();
  std::vector<size_t> load(members_.size(), 0);
  std::vector<std::string> commands(members_.size());
  for (const WorkerJob& job : batch) {
    const auto owner = owner_.find(job.program_key);
    size_t to = live.front();
    if (owner != owner_.end() && !members_[owner->second].done && load[owner->second] < share) {
      to = owner->second;
    } else {
      for (const size_t i : live) to = load[i] < load[to] ? i : to;
      owner_.emplace(job.program_key, to);
    }
    ++load[to];
    commands[to] += command_of(job);
  }
  for (const size_t i : live) {
    if (!commands[i].empty()) send(members_[i], commands[i], load[i]);
  }
  drain(take, [&] { return idle(); });
}

void WorkerPool::run_each(const std::vector<WorkerJob>& jobs, const TakeJob& take) {
  size_t next = 0;
  const auto feed = [&](Member& m) {
    if (next < jobs.size() && !m.done) send(m, command_of(jobs[next++]), 1);
  };
  for (Member& m : members_) feed(m);
  const auto live = [&] {
    return std::any_of(members_.begin(), members_.end(), [](const Member& m) { return !m.done; });
  };
  drain(
      take, [&] { return idle() && (next == jobs.size() || !live()); }, feed);
}

void WorkerPool::send(Member& m, const std::string& commands, size_t jobs) {
  m.pending += jobs;
  for (size_t written = 0; written < commands.size();) {
    const ssize_t n = ::write(m.commands, commands.data() + written, commands.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the worker is gone: drain reaps it
    written += static_cast<size_t>(n);
  }
}

bool WorkerPool::idle() const {
  return std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.pending == 0; });
}

WorkerCounts WorkerPool::finish() {
  finished_ = true;
  for (Member& m : members_) {
    if (m.commands >= 0) ::close(m.commands), m.commands = -1;
  }
  const TakeJob none = [](size_t, const Json*, const std::string&) {};
  drain(none, [&] { return std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.done; }); });
  progress_->finish();
  std::signal(SIGPIPE, sigpipe_ == SIG_ERR ? SIG_DFL : sigpipe_);
  return counts_;
}

}  // namespace tpsim::plan
