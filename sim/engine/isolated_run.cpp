// fork + pipe wrapper around simulate_in_this_process, with a small binary encoding of the timeline.
#include "sim/engine/isolated_run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/child_process.hpp"
#include "base/input_error.hpp"
#include "sim/engine/runner/window_clock.hpp"
#include "sim/engine/simulation_cache.hpp"
#include "sim/engine/work_estimate.hpp"

namespace tpsim::sim {
namespace {

void write_all(int fd, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    bytes += n;
    size -= static_cast<size_t>(n);
  }
}

bool read_all(int fd, void* data, size_t size) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void run_child(int fd, const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options,
                            std::shared_ptr<const std::vector<CommPlan>> plans) {
  uint8_t status = 0;
  try {
    const Timeline timeline = simulate_in_this_process(graph, cost, options, std::move(plans));
    const uint64_t count = timeline.spans.size();
    write_all(fd, &status, sizeof status);
    write_all(fd, &timeline.ranks, sizeof timeline.ranks);
    write_all(fd, &timeline.makespan_s, sizeof timeline.makespan_s);
    write_all(fd, &count, sizeof count);
    write_all(fd, timeline.spans.data(), count * sizeof(OpSpan));
  } catch (const std::bad_alloc&) {
    // 3: out of memory (the parent says what would fit).
    status = 3;
    write_all(fd, &status, sizeof status);
  } catch (const std::exception& error) {
    // 2: bad input (a profile without a section an op needs), reported as such; 1: a failure.
    status = dynamic_cast<const InputError*>(&error) ? 2 : 1;
    const std::string message = error.what();
    const uint64_t size = message.size();
    write_all(fd, &status, sizeof status);
    write_all(fd, &size, sizeof size);
    write_all(fd, message.data(), size);
  }
  ::close(fd);
  _exit(0);
}

// The child ended without sending a result (killed, or crashed).
struct ChildDied {};

Timeline read_timeline(int fd) {
  uint8_t status = 0;
  if (!read_all(fd, &status, sizeof status)) throw ChildDied{};
  if (status == 3) throw std::bad_alloc();
  if (status != 0) {
    uint64_t size = 0;
    std::string message;
    if (read_all(fd, &size, sizeof size)) {
      message.resize(size);
      read_all(fd, message.data(), size);
    }
    if (status == 2) throw InputError(message);
    throw std::logic_error("simulation failed: " + message);
  }
  Timeline timeline;
  uint64_t count = 0;
  if (!read_all(fd, &timeline.ranks, sizeof timeline.ranks) ||
      !read_all(fd, &timeline.makespan_s, sizeof timeline.makespan_s) || !read_all(fd, &count, sizeof count)) {
    throw std::runtime_error("simulation process sent a truncated result");
  }
  timeline.spans.resize(count);
  if (!read_all(fd, timeline.spans.data(), count * sizeof(OpSpan))) {
    throw std::runtime_error("simulation process sent a truncated timeline");
  }
  return timeline;
}

}  // namespace

namespace {
Timeline simulate_uncached(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options);
}  // namespace

namespace {
Timeline simulate_cached(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options);
}  // namespace

Timeline simulate(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options) {
  if (!options.window_clock) {
    Timeline timeline = simulate_cached(graph, cost, options);
    timeline.clock_ratio = cost.clock_ratio();
    return timeline;
  }
  return simulate_at_window_clock(graph, cost,
                                  [&](const CostModel& at) { return simulate_cached(graph, at, options); });
}

namespace {
Timeline simulate_cached(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options) {
  SimulationCache* cache = cacheable(options) ? active_simulation_cache() : nullptr;
  if (!cache) return simulate_uncached(graph, cost, options);
  const SimulationCache::Key key = cache->key(graph, cost, options);
  if (std::optional<Timeline> hit = cache->find(key)) {
    // The cache keeps no plans (they would stay in the memory every later simulation's fork copies): made again.
    hit->plans = plan_program(graph, cost, options.data_group.has_value());
    return std::move(*hit);
  }
  const auto start = std::chrono::steady_clock::now();
  Timeline timeline = simulate_uncached(graph, cost, options);
  cache->store(key, timeline, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return timeline;
}
}  // namespace

namespace {
Timeline simulate_uncached(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options) {
  // Planned here, so that bad input (a collective the profile cannot run) is reported before forking and
  // the timeline carries the plans the child ran.
  std::shared_ptr<const std::vector<CommPlan>> plans = plan_program(graph, cost, options.data_group.has_value());
  refuse_unbounded_work(estimate_work(graph, *plans, options), smaller_alternative(options));
  // The simulation dies with its parent (a sweep worker killed with its sweep, a run interrupted): orphaned, it would
  // run on and hold what it inherited (fork_child).
  const ChildProcess child = fork_child([&](int fd) { run_child(fd, graph, cost, options, plans); });
  Timeline timeline;
  try {
    timeline = read_timeline(child.fd);
  } catch (const ChildDied&) {
    ::close(child.fd);
    int wstatus = 0;
    ::waitpid(child.pid, &wstatus, 0);
    // The system's out-of-memory killer ends a process with SIGKILL; any other end is a crash.
    if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) {
      throw InputError("the simulation process was killed (signal 9), most likely by the system for lack of memory; " +
                       smaller_alternative(options));
    }
    throw std::runtime_error(
        "simulation process died without a result" +
        (WIFSIGNALED(wstatus) ? " (signal " + std::to_string(WTERMSIG(wstatus)) + ")" : std::string()));
  } catch (const std::bad_alloc&) {
    ::close(child.fd);
    ::waitpid(child.pid, nullptr, 0);
    throw InputError("the simulation ran out of memory; " + smaller_alternative(options));
  } catch (...) {
    ::close(child.fd);
    ::waitpid(child.pid, nullptr, 0);
    throw;
  }
  ::close(child.fd);
  timeline.plans = std::move(plans);
  int wstatus = 0;
  ::waitpid(child.pid, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    throw std::runtime_error("simulation process exited abnormally");
  }
  return timeline;
}
}  // namespace

}  // namespace tpsim::sim
