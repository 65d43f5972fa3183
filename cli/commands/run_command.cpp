// Simulates and renders everything before writing anything, then writes its outputs all or none, so an error leaves
// no partial outputs.
#include "cli/commands/run_command.hpp"

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <memory>

#include "base/input_error.hpp"
#include "cli/arguments.hpp"
#include "cli/output_file.hpp"
#include "cli/report/report_json.hpp"
#include "cli/report/report_memory.hpp"
#include "cli/report/report_table.hpp"
#include "cli/report/results_csv.hpp"
#include "cli/report/sweep_summary.hpp"
#include "input/sweep.hpp"
#include "sim/report/trace_export.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::cli {
namespace {

// A line on stderr, rewritten in place, once the run has lasted this long (and only on a terminal).
constexpr std::chrono::seconds kProgressAfter{2};

class Progress {
 public:
  explicit Progress(bool wanted) : shown_(wanted && ::isatty(STDERR_FILENO)) {}
  ~Progress() {
    if (written_) std::cerr << "\r\033[K" << std::flush;
  }

  void update(const std::string& text) {
    if (!shown_ || std::chrono::steady_clock::now() - start_ < kProgressAfter) return;
    std::cerr << "\r\033[Ktpsim: " << text << std::flush;
    written_ = true;
  }

 private:
  bool shown_;
  bool written_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string point_heading(size_t i, const std::vector<model::SweepPoint>& points) {
  std::string text = "point " + std::to_string(i + 1) + "/" + std::to_string(points.size()) + ":";
  for (const auto& [axis, value] : points[i].values) text += " " + axis + "=" + value;
  return text;
}

// --trace-ranks: "all" (every GPU, 0) or how many from the first.
sim::TraceOptions trace_options(const std::string& ranks) {
  sim::TraceOptions options;
  if (ranks == "all") {
    options.ranks = 0;
    return options;
  }
  size_t used = 0;
  int count = 0;
  try {
    count = std::stoi(ranks, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != ranks.size() || count < 1) {
    throw InputError("--trace-ranks " + ranks + ": give how many GPUs of each pass to trace (1 or more) or all");
  }
  options.ranks = count;
  return options;
}

}  // namespace

int run_command(const RunOptions& options) {
  const model::Scenario base = model::load_scenario(options.scenario);
  const std::vector<model::SweepPoint> points = model::expand_sweep(base);
  if (points.size() > 1 && !options.trace_out.empty()) {
    throw InputError(options.scenario + ": --trace shows one run, but the sweep has " + std::to_string(points.size()) +
                     " points; remove the sweep block to trace one");
  }
  const sim::TraceOptions trace_shown = trace_options(options.trace_ranks);
  std::vector<PointRun> runs;
  std::string table;
  std::vector<std::string> deviations;  // said once, after every point
  Progress progress(options.progress);
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string where = points.size() > 1 ? point_heading(i, points) + " " : std::string();
    const sim::VariantStarted started = [&](const model::Variant& v, size_t index) {
      progress.update(where + "variant " + v.name + " (" + std::to_string(index + 1) + "/" +
                      std::to_string(points[i].scenario.variants.size()) + ")");
    };
    const sim::Symmetry symmetry = options.no_symmetry ? sim::Symmetry::kEveryMember : sim::Symmetry::kOneMember;
    runs.push_back({points[i].values, sim::run_scenario(points[i].scenario, started, nullptr, symmetry)});
    const sim::ScenarioRun& run = runs.back().run;
    if (options.require_fit) sim::require_memory_fit(run);
    if (points.size() > 1) table += point_heading(i, points) + "\n";
    table += comparison_table(run) + op_times_table(run);
    add_collective_deviations(run, deviations);
    if (options.breakdown) table += breakdown_table(run);
    if (options.memory) table += memory_table(run);
    if (options.critical_path) table += critical_path_table(run);
  }
  table += sweep_summary_table(runs);
  for (const std::string& d : deviations) table += "note: " + d + "\n";
  const std::string json = options.json_out.empty() ? "" : result_json(runs, options.critical_path);
  const std::string trace = options.trace_out.empty() ? "" : sim::chrome_trace_json(runs.front().run, trace_shown);
  std::string csv;
  if (!options.csv_out.empty()) {
    std::vector<CsvPoint> rows;
    for (size_t i = 0; i < runs.size(); ++i) {
      CsvPoint point{i, runs[i].values, {}};
      for (const sim::VariantRun& v : runs[i].run.variants)
        point.rows.push_back(result_row(runs[i].values, v, runs[i].run.gpu));
      rows.push_back(std::move(point));
    }
    csv = results_csv(rows);
  }
  std::vector<std::pair<std::string, std::string>> outputs;
  if (!options.json_out.empty()) outputs.emplace_back(options.json_out, json);
  if (!options.trace_out.empty()) outputs.emplace_back(options.trace_out, trace);
  if (!options.csv_out.empty()) outputs.emplace_back(options.csv_out, csv);
  write_outputs(outputs);
  const bool stdout_taken = options.json_out == "-" || options.trace_out == "-" || options.csv_out == "-";
  if (!options.quiet && !stdout_taken) std::cout << table;
  return 0;
}

void add_run_command(CLI::App& app, Commands& commands) {
  auto run = std::make_shared<RunOptions>();
  CLI::App* run_app = app.add_subcommand("run", "Simulate every variant of a scenario and print the comparison table");
  run_app
      ->add_option("scenario", run->scenario,
                   "Scenario YAML file (see scenarios/); a sweep block runs every point of its cartesian product")
      ->required()
      ->check(CLI::ExistingFile);
  run_app->add_option("--json", run->json_out, "Write the resolved inputs and results as JSON to FILE, or - for stdout")
      ->check(output_file_path());
  run_app
      ->add_option("--trace", run->trace_out,
                   "Write a Chrome trace (open in Perfetto) to FILE, or - for stdout: one process per GPU, one "
                   "thread per stream; under a pipeline, a thread per stage with its passes; arrows join a "
                   "collective's ranks, a send's ends and the stages")
      ->check(output_file_path());
  run_app
      ->add_option("--trace-ranks", run->trace_ranks,
                   "The GPUs of each simulated pass the trace shows: how many from the first (default 1: the TP ranks "
                   "of a symmetric run are identical), or all")
      ->capture_default_str();
  run_app->add_flag("-q,--quiet", run->quiet, "Do not print the table");
  run_app->add_option("--csv", run->csv_out, "Write one CSV row per point and variant to FILE, or - for stdout")
      ->check(output_file_path());
  run_app->add_flag("--breakdown", run->breakdown,
                    "Print where each variant's time goes: by module (attention, FFN) and by kind (GEMM, attention, "
                    "memory-bound, communication, exposed communication)");
  run_app->add_flag("--memory", run->memory,
                    "Print each variant's memory per GPU by part (weights, gradients, optimizer state, activations, "
                    "KV cache, buffers, cuBLAS workspaces, the allocator's reserve, CUDA context, NCCL buffers), per "
                    "stage under a pipeline, against the GPU's usable HBM; always for the whole model");
  run_app->add_flag("--critical-path", run->critical_path,
                    "Print the chain of ops and waits that decides each variant's time, each with its share (and "
                    "the whole chain in --json)");
  run_app->add_flag("--no-symmetry", run->no_symmetry,
                    "Simulate every data-parallel replica, their collectives step by step between them, instead of "
                    "one replica and the collectives' closed form, and under a pipeline the whole step, every stage "
                    "at once, instead of the schedule timed from each stage's program (slower; a check of the "
                    "symmetric model)");
  run_app->add_flag("!--no-progress", run->progress, "Do not show progress (shown only on a terminal, after 2 s)");
  run_app->add_flag("--require-fit", run->require_fit,
                    "Refuse (exit 2, nothing written) a variant whose memory per GPU (the whole model, with the "
                    "allocator's reserve, CUDA context and NCCL buffers) exceeds the HBM the GPU gives");
  commands.push_back({run_app, [run] { return run_command(*run); }});
}

}  // namespace tpsim::cli
