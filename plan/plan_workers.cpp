// Worker processes for a plan's candidates: sharing by program key, one JSON line per candidate, progress.
#include "plan/plan_workers.hpp"

#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "base/child_process.hpp"

namespace tpsim::plan {
namespace {

using Json = nlohmann::ordered_json;

// A worker: simulates its candidates in order, one JSON line each, then its cache's counts.
void run_worker(int fd, const std::vector<size_t>& mine, const SimulateJob& simulate, bool use_cache) {
  sim::SimulationCache cache;
  if (use_cache) cache.install();
  for (size_t index : mine) {
    Json message;
    message["index"] = index;
    try {
      message["row"] = simulate(index, cache);
    } catch (const std::exception& error) {
      message["error"] = error.what();
    }
    write_or_exit(fd, message.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
    // The candidate's run is freed: its heap pages go back to the system, so that each later simulation's fork copies
    // no page tables for them.
    ::malloc_trim(0);
  }
  Json end;
  end["cache"] = {{"hits", cache.stats().hits}, {"misses", cache.stats().misses}, {"saved_s", cache.stats().saved_s}};
  write_or_exit(fd, end.dump() + "\n");
}

struct Worker {
  ChildProcess process;
  std::string buffer;
  bool done = false;
};

class Progress {
 public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}
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

// Handles one complete line of a worker.
void take_line(const std::string& line, const TakeJob& take, WorkerCounts& counts, Progress& progress) {
  const Json message = Json::parse(line);
  if (message.contains("cache")) {
    counts.cache_hits += message["cache"]["hits"].get<int64_t>();
    counts.cache_misses += message["cache"]["misses"].get<int64_t>();
    counts.cache_saved_s += message["cache"]["saved_s"].get<double>();
    return;
  }
  const size_t index = message["index"];
  progress.step();
  if (message.contains("error")) {
    take(index, nullptr, message["error"].get<std::string>());
    return;
  }
  take(index, &message["row"], "");
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
  Progress progress(jobs.size(), options.progress);
  std::vector<Worker> workers;
  for (const auto& share : shares_of(jobs, static_cast<size_t>(std::max(1, options.jobs)))) {
    if (share.empty()) continue;
    workers.push_back(Worker{fork_child([&](int fd) { run_worker(fd, share, simulate, options.cache); }), {}, false});
  }
  size_t open = workers.size();
  while (open > 0) {
    std::vector<pollfd> fds;
    for (const Worker& w : workers) fds.push_back(pollfd{w.done ? -1 : w.process.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
    }
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = workers[i];
      if (w.done || fds[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(w.process.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        w.buffer.append(buffer, static_cast<size_t>(n));
        for (size_t end; (end = w.buffer.find('\n')) != std::string::npos;) {
          take_line(w.buffer.substr(0, end), take, counts, progress);
          w.buffer.erase(0, end + 1);
        }
        continue;
      }
      const int status = reap_child(w.process);
      w.done = true;
      --open;
      if (!exited_cleanly(status)) counts.crashes.push_back("a worker process crashed" + signal_note(status));
    }
  }
  progress.finish();
  return counts;
}

}  // namespace tpsim::plan
