// Worker processes (fork per point, results over a pipe), progress on a terminal, journal appends.
#include "cli/commands/sweep_command.hpp"

#include <poll.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/child_process.hpp"
#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "cli/arguments.hpp"
#include "cli/commands/sweep_journal.hpp"
#include "cli/folder_lock.hpp"
#include "cli/output_file.hpp"
#include "input/sweep.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;

// More worker processes than this is a typo, not a machine.
constexpr int kMaxJobs = 1024;
// Missing points a merge error names before "and N more".
constexpr size_t kNamedMissing = 20;
constexpr int64_t kMaxInfoBytes = int64_t{1} << 20;

struct Worker {
  ChildProcess process;
  size_t index = 0;
  std::string output;
};

std::string describe(const model::SweepPlan& plan, size_t index) {
  std::string text = "point " + std::to_string(index);
  for (const auto& [axis, value] : plan.values(index)) text += " " + axis + "=" + value;
  return text;
}

// The child: simulate one point and send {"rows": [...]} or {"error": "..."} as one line.
void run_point(int fd, const model::SweepPlan& plan, size_t index, bool require_fit) {
  if (const char* crash = std::getenv("TPSIM_TEST_CRASH_POINT"); crash && std::to_string(index) == crash) std::abort();
  Json message;
  try {
    const sim::ScenarioRun run = sim::run_scenario(plan.point(index));
    if (require_fit) sim::require_memory_fit(run);
    const model::AxisValues values = plan.values(index);
    message["rows"] = Json::array();
    for (const sim::VariantRun& v : run.variants) message["rows"].push_back(result_row(values, v, run.gpu));
  } catch (const std::exception& error) {
    message["error"] = error.what();
  }
  write_or_exit(fd, message.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

Worker start_worker(const model::SweepPlan& plan, size_t index, bool require_fit, int lock_fd) {
  // The sweep holds the folder's lock; the worker's copy (and its simulation processes', forked from it) would keep
  // it held for as long as they take to die after the sweep, and an orphan would refuse the resume of a sweep killed
  // with SIGKILL (fork_child: the worker dies with the sweep).
  return Worker{fork_child([&](int fd) { run_point(fd, plan, index, require_fit); }, lock_fd), index, {}};
}

// Reads what is available; returns true at end of file.
bool drain(Worker& worker) {
  char buffer[65536];
  const ssize_t n = ::read(worker.process.fd, buffer, sizeof buffer);
  if (n < 0 && errno == EINTR) return false;
  if (n <= 0) return true;
  worker.output.append(buffer, static_cast<size_t>(n));
  return false;
}

class Progress {
 public:
  Progress(size_t total, size_t skipped, bool enabled)
      : total_(total), skipped_(skipped), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

  void point_done() {
    ++done_;
    if (!enabled_) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = done_ / std::max(elapsed, 1e-9);
    const double left = static_cast<double>(total_ - skipped_ - done_) / rate;
    std::fprintf(stderr, "\rsweep: %zu/%zu points (%zu already done), %.1f points/s, about %.0f s left   ",
                 skipped_ + done_, total_, skipped_, rate, left);
    std::fflush(stderr);
  }
  void finish() const {
    if (enabled_ && done_ > 0) std::fprintf(stderr, "\n");
  }

 private:
  size_t total_, skipped_, done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

// Records a finished worker: a journal entry, or a failure message.
void collect(Worker& worker, const model::SweepPlan& plan, SweepJournal& journal, std::vector<std::string>& failures) {
  const int status = reap_child(worker.process);
  const std::string what = describe(plan, worker.index);
  if (!exited_cleanly(status) || worker.output.empty() || worker.output.back() != '\n') {
    failures.push_back(what + ": the worker process crashed" + signal_note(status));
    return;
  }
  const Json message = Json::parse(worker.output);
  if (message.contains("error")) {
    failures.push_back(what + ": " + message["error"].get<std::string>());
    return;
  }
  journal.append(JournalEntry{worker.index, plan.values(worker.index), message["rows"]});
}

void run_workers(const std::vector<size_t>& todo, const model::SweepPlan& plan, int jobs, bool require_fit, int lock_fd,
                 SweepJournal& journal, Progress& progress, std::vector<std::string>& failures) {
  std::vector<Worker> running;
  size_t next = 0;
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && static_cast<int>(running.size()) < jobs) {
      running.push_back(start_worker(plan, todo[next], require_fit, lock_fd));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Worker& w : running) fds.push_back(pollfd{w.process.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
    }
    for (size_t i = running.size(); i-- > 0;) {
      if (fds[i].revents == 0 || !drain(running[i])) continue;
      collect(running[i], plan, journal, failures);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      progress.point_done();
    }
  }
}

// DIR/sweep.json: what the folder holds (the plot script titles figures with the scenario name).
void write_sweep_info(const std::string& dir, const std::string& name, const model::SweepPlan& plan) {
  Json info;
  info["scenario"] = name;
  info["points"] = plan.size();
  info["axes"] = Json::array();
  for (const auto& [axis, value] : plan.values(0)) info["axes"].push_back(axis);
  write_output(dir + "/sweep.json", info.dump(2) + "\n");
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      size_t used_i = 0, used_n = 0;
      const long i = std::stol(text.substr(0, slash), &used_i);
      const long n = std::stol(text.substr(slash + 1), &used_n);
      if (used_i == slash && used_n == text.size() - slash - 1 && n >= 1 && i >= 1 && i <= n) {
        return Shard{static_cast<size_t>(i - 1), static_cast<size_t>(n)};
      }
    }
  } catch (const std::exception&) {
  }
  throw InputError("--shard " + text + ": expected i/N with 1 <= i <= N (e.g. 2/8: the second of 8 shards)");
}

int run_sweep(const SweepOptions& options) {
  if (options.jobs < 1 || options.jobs > kMaxJobs) {
    throw InputError("-j " + std::to_string(options.jobs) + ": must be from 1 to " + std::to_string(kMaxJobs));
  }
  const std::string text = read_input_file(options.scenario, "scenario", model::kMaxYamlFileBytes);
  const model::Scenario base = model::parse_scenario(text, options.scenario);
  // The parent holds no scenarios (workers build their own point): forks stay cheap.
  const model::SweepPlan plan(base);
  const Shard shard = options.shard.empty() ? Shard{} : parse_shard(options.shard);
  const FolderLock lock(options.out_dir);  // one sweep at a time writes journal.jsonl, sweep.json and results
  SweepJournal journal(options.out_dir, fingerprint_of(text), plan.size());
  const std::map<size_t, JournalEntry> done = journal.load();
  write_sweep_info(options.out_dir, base.name, plan);
  std::vector<size_t> mine, todo;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (i % shard.count != shard.index) continue;
    mine.push_back(i);
    if (!done.count(i)) todo.push_back(i);
  }
  Progress progress(mine.size(), mine.size() - todo.size(), options.progress && ::isatty(STDERR_FILENO));
  std::vector<std::string> failures;
  std::vector<size_t> runnable;
  for (size_t index : todo) {
    try {
      plan.point(index);  // checked here, built again by its worker
      runnable.push_back(index);
    } catch (const InputError& error) {
      failures.push_back(describe(plan, index) + ": invalid: " + error.what());
      progress.point_done();
    }
  }
  run_workers(runnable, plan, options.jobs, options.require_fit, lock.fd(), journal, progress, failures);
  progress.finish();

  std::map<size_t, JournalEntry> results;
  for (auto& [index, entry] : journal.load()) {
    if (index % shard.count == shard.index) results.emplace(index, std::move(entry));
  }
  write_results(options.out_dir, results);
  std::cerr << "sweep: " << results.size() << " of " << mine.size() << " points done (" << mine.size() - todo.size()
            << " from an earlier run); results in " << options.out_dir << "/results.csv and results.jsonl\n";
  for (const std::string& failure : failures) std::cerr << "sweep: failed: " << failure << "\n";
  return failures.empty() ? 0 : 3;  // 3: some points failed; the others are in the results
}

int merge_sweeps(const std::vector<std::string>& dirs, const std::string& out_dir) {
  std::error_code error;
  if (std::filesystem::exists(out_dir, error) && !std::filesystem::is_empty(out_dir, error)) {
    throw InputError(echo_path(out_dir) + ": not empty; merge into a new or empty folder");
  }
  JournalFile merged;
  for (const std::string& dir : dirs) {
    JournalFile file = read_journal(dir);
    if (!merged.fingerprint.empty() && (file.fingerprint != merged.fingerprint || file.points != merged.points)) {
      throw InputError(dir + ": a shard of another scenario than " + dirs.front() + "; merge shards of one sweep");
    }
    merged.fingerprint = file.fingerprint;
    merged.points = file.points;
    for (auto& [index, entry] : file.entries) merged.entries.try_emplace(index, std::move(entry));
  }
  std::string missing;
  size_t lacking = 0;
  for (size_t i = 0; i < merged.points; ++i) {
    if (merged.entries.count(i)) continue;
    if (++lacking <= kNamedMissing) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  if (lacking > kNamedMissing) missing += " and " + std::to_string(lacking - kNamedMissing) + " more";
  if (!missing.empty()) {
    throw InputError("merge: the shards lack points " + missing + " of " + std::to_string(merged.points) +
                     "; rerun their shards (tpsim sweep resumes) and merge again");
  }
  const FolderLock lock(out_dir);
  SweepJournal journal(out_dir, merged.fingerprint, merged.points);
  if (!journal.load().empty()) throw InputError(out_dir + ": already holds a sweep; merge into an empty folder");
  for (const auto& [index, entry] : merged.entries) journal.append(entry);
  const std::string info = dirs.front() + "/sweep.json";
  if (is_regular_file(info)) write_output(out_dir + "/sweep.json", read_input_file(info, "sweep.json", kMaxInfoBytes));
  write_results(out_dir, merged.entries);
  std::cerr << "merge: " << merged.entries.size() << " points from " << dirs.size() << " folders into " << out_dir
            << "\n";
  return 0;
}

void add_sweep_commands(CLI::App& app, Commands& commands) {
  auto sweep = std::make_shared<SweepOptions>();
  CLI::App* sweep_app =
      app.add_subcommand("sweep", "Run every point of a scenario's sweep in parallel processes; resumable, shardable");
  sweep_app->add_option("scenario", sweep->scenario, "Scenario YAML file with a sweep block")
      ->required()
      ->check(CLI::ExistingFile);
  sweep_app
      ->add_option("-o,--out", sweep->out_dir,
                   "Output folder: journal.jsonl (resumable state), results.csv, results.jsonl")
      ->required()
      ->check(output_folder_path());
  sweep->jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  sweep_app->add_option("-j,--jobs", sweep->jobs, "Worker processes")->capture_default_str();
  sweep_app->add_option(
      "--shard", sweep->shard,
      "Run only shard i of N (i/N, 1-based): points whose index mod N is i-1 (one Slurm array task each)");
  sweep_app->add_flag("!--no-progress", sweep->progress, "Do not show progress (shown only on a terminal)");
  sweep_app->add_flag("--require-fit", sweep->require_fit,
                      "A point with a variant whose memory per GPU (the whole model, with the allocator's reserve, "
                      "CUDA context and NCCL buffers) exceeds the HBM the GPU gives fails, with the numbers");
  commands.push_back({sweep_app, [sweep] { return run_sweep(*sweep); }});

  struct MergeOptions {
    std::vector<std::string> dirs;
    std::string out;
  };
  auto merge = std::make_shared<MergeOptions>();
  CLI::App* merge_app = app.add_subcommand("merge", "Join the output folders of sweep shards into one result");
  merge_app->add_option("folders", merge->dirs, "Shard output folders")->required()->check(CLI::ExistingDirectory);
  merge_app->add_option("-o,--out", merge->out, "Output folder (new or empty)")
      ->required()
      ->check(output_folder_path());
  commands.push_back({merge_app, [merge] { return merge_sweeps(merge->dirs, merge->out); }});
}

}  // namespace tpsim::cli
