// The tpsim command line: run, sweep, merge, plot, predict, calibrate, validate and shard (see --help of each).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <iostream>
#include <limits>
#include <new>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "cli/arguments.hpp"
#include "cli/commands/calibrate_command.hpp"
#include "cli/commands/plot_command.hpp"
#include "cli/commands/predict_command.hpp"
#include "cli/commands/run_command.hpp"
#include "cli/commands/shard_command.hpp"
#include "cli/commands/sweep_command.hpp"
#include "cli/commands/trace_validate_command.hpp"
#include "cli/commands/validate_command.hpp"
#include "cli/output_file.hpp"
#include "cli/report/report_json.hpp"
#include "cli/report/report_table.hpp"
#include "input/presets.hpp"
#include "input/sweep.hpp"
#include "model/scenario.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/report/trace_export.hpp"
#include "sim/run/scenario_run.hpp"

int main(int argc, char** argv) {
  // A reader that closes stdout early (`--trace - | head`) fails the write (EPIPE), which ends stdout quietly
  // (cli/output_file.cpp), instead of killing tpsim with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "tpsim: simulate Transformer training steps and inference serving on modelled GPU clusters (tensor, sequence, "
      "pipeline, data and expert parallelism), calibrate its costs from measurements, and plan DTP layouts"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tpsim 0.1.0");

  tpsim::cli::RunOptions run;
  CLI::App* run_app = app.add_subcommand("run", "Simulate every variant of a scenario and print the comparison table");
  run_app
      ->add_option("scenario", run.scenario,
                   "Scenario YAML file (see scenarios/); a sweep block runs every point of its cartesian product")
      ->required()
      ->check(CLI::ExistingFile);
  run_app->add_option("--json", run.json_out, "Write the resolved inputs and results as JSON to FILE, or - for stdout")
      ->check(tpsim::cli::output_file_path());
  run_app
      ->add_option("--trace", run.trace_out,
                   "Write a Chrome trace (open in Perfetto) to FILE, or - for stdout: one process per GPU, one "
                   "thread per stream; under a pipeline, a thread per stage with its passes; arrows join a "
                   "collective's ranks, a send's ends and the stages")
      ->check(tpsim::cli::output_file_path());
  run_app
      ->add_option("--trace-ranks", run.trace_ranks,
                   "The GPUs of each simulated pass the trace shows: how many from the first (default 1: the TP ranks "
                   "of a symmetric run are identical), or all")
      ->capture_default_str();
  run_app->add_flag("-q,--quiet", run.quiet, "Do not print the table");
  run_app->add_option("--csv", run.csv_out, "Write one CSV row per point and variant to FILE, or - for stdout")
      ->check(tpsim::cli::output_file_path());
  run_app->add_flag("--breakdown", run.breakdown,
                    "Print where each variant's time goes: by module (attention, FFN) and by kind (GEMM, attention, "
                    "memory-bound, communication, exposed communication)");
  run_app->add_flag("--memory", run.memory,
                    "Print each variant's memory per GPU by part (weights, gradients, optimizer state, activations, "
                    "KV cache, buffers, cuBLAS workspaces, the allocator's reserve, CUDA context, NCCL buffers), per "
                    "stage under a pipeline, against the GPU's usable HBM; always for the whole model");
  run_app->add_flag("--critical-path", run.critical_path,
                    "Print the chain of ops and waits that decides each variant's time, each with its share (and "
                    "the whole chain in --json)");
  run_app->add_flag("--no-symmetry", run.no_symmetry,
                    "Simulate every data-parallel replica, their collectives step by step between them, instead of "
                    "one replica and the collectives' closed form, and under a pipeline the whole step, every stage "
                    "at once, instead of the schedule timed from each stage's program (slower; a check of the "
                    "symmetric model)");
  run_app->add_flag("!--no-progress", run.progress, "Do not show progress (shown only on a terminal, after 2 s)");
  run_app->add_flag("--require-fit", run.require_fit,
                    "Refuse (exit 2, nothing written) a variant whose memory per GPU (the whole model, with the "
                    "allocator's reserve, CUDA context and NCCL buffers) exceeds the HBM the GPU gives");

  tpsim::cli::SweepOptions sweep;
  CLI::App* sweep_app =
      app.add_subcommand("sweep", "Run every point of a scenario's sweep in parallel processes; resumable, shardable");
  sweep_app->add_option("scenario", sweep.scenario, "Scenario YAML file with a sweep block")
      ->required()
      ->check(CLI::ExistingFile);
  sweep_app
      ->add_option("-o,--out", sweep.out_dir,
                   "Output folder: journal.jsonl (resumable state), results.csv, results.jsonl")
      ->required()
      ->check(tpsim::cli::output_folder_path());
  sweep.jobs = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  sweep_app->add_option("-j,--jobs", sweep.jobs, "Worker processes")->capture_default_str();
  sweep_app->add_option(
      "--shard", sweep.shard,
      "Run only shard i of N (i/N, 1-based): points whose index mod N is i-1 (one Slurm array task each)");
  sweep_app->add_flag("!--no-progress", sweep.progress, "Do not show progress (shown only on a terminal)");
  sweep_app->add_flag("--require-fit", sweep.require_fit,
                      "A point with a variant whose memory per GPU (the whole model, with the allocator's reserve, "
                      "CUDA context and NCCL buffers) exceeds the HBM the GPU gives fails, with the numbers");

  std::vector<std::string> merge_dirs;
  std::string merge_out;
  CLI::App* merge_app = app.add_subcommand("merge", "Join the output folders of sweep shards into one result");
  merge_app->add_option("folders", merge_dirs, "Shard output folders")->required()->check(CLI::ExistingDirectory);
  merge_app->add_option("-o,--out", merge_out, "Output folder (new or empty)")
      ->required()
      ->check(tpsim::cli::output_folder_path());

  CLI::App* plot_app = app.add_subcommand(
      "plot", "Plot sweep or run results (matplotlib): speedup curves or a time breakdown; see tpsim plot --help");
  plot_app->prefix_command();  // every argument, --help included, goes to the plot script
  plot_app->set_help_flag("");

  tpsim::cli::PredictTarget predict;
  tpsim::cli::GemmQuery gemm_query;
  tpsim::cli::CollectiveQuery collective_query;
  CLI::App* predict_app = app.add_subcommand("predict", "Predict one op's time without a scenario");
  predict_app->require_subcommand(1);
  const auto add_target = [&](CLI::App* sub) {
    sub->add_option("--gpu", predict.gpu, "GPU preset")->capture_default_str();
    sub->add_option("--calibration", predict.calibration, "default (the GPU's profile) or a profile file")
        ->capture_default_str();
    sub->add_flag("--json", predict.json, "Print JSON (time_s and tflops, or algbw_GBps / busbw_GBps)");
  };
  CLI::App* gemm_app = predict_app->add_subcommand("gemm", "A bf16 GEMM of M x K times K x N");
  add_target(gemm_app);
  gemm_app->add_option("--m", gemm_query.m, "Rows of A and C")->required();
  gemm_app->add_option("--n", gemm_query.n, "Columns of B and C")->required();
  gemm_app->add_option("--k", gemm_query.k, "Inner dimension")->required();
  gemm_app->add_option("--dtype", gemm_query.dtype, "bf16, or fp8 (e4m3 operands, bf16 output)")->capture_default_str();
  CLI::App* coll_app =
      predict_app->add_subcommand("collective", "A collective alone on an idle node (nccl-tests algbw / busbw)");
  add_target(coll_app);
  coll_app->add_option("--topology", collective_query.topology, "Topology")->capture_default_str();
  coll_app->add_option("--ranks", collective_query.ranks, "GPUs in the group")->capture_default_str();
  coll_app->add_option("--nic-GBps", collective_query.nic_GBps, "ib-rail: each GPU's NIC, one direction (default 50)");
  coll_app->add_option("--oversubscription", collective_query.oversubscription,
                       "ib-rail: the fat tree's oversubscription above the rail switches (default 1: non-blocking)");
  coll_app->add_option("--kind", collective_query.kind, "allreduce, allgather, reducescatter, alltoall or sendrecv")
      ->capture_default_str();
  coll_app->add_option("--bytes", collective_query.bytes,
                       "Tensor size (all-reduce input, all-gather output, reduce-scatter input): 1048576, 64MiB, 2GB");
  coll_app->add_option("-b,--min-bytes", collective_query.min_bytes, "Or a sweep, as nccl-tests: the smallest size");
  coll_app->add_option("-e,--max-bytes", collective_query.max_bytes, "The largest size of the sweep");
  coll_app->add_option("-f,--step-factor", collective_query.factor, "The sweep's size factor")->capture_default_str();
  coll_app
      ->add_option("--algorithm", collective_query.algorithm,
                   "nccl (what NCCL's tuner runs), auto (the fastest the profile has, custom kernels included), "
                   "ring, one_shot (oneshot), two_shot (twoshot), nvls or tree (all-reduce)")
      ->capture_default_str();
  coll_app
      ->add_option("--protocol", collective_query.protocol,
                   "NCCL_PROTO: auto (NCCL's choice; with --algorithm auto the fastest regime the profile has), "
                   "simple, ll or ll128")
      ->capture_default_str();
  coll_app
      ->add_option("--as-called", collective_query.as_called,
                   "How a call is timed: nccl-tests (calls launched back to back: the host's launch path where it is "
                   "longer than the device's time), torch (one call through torch.distributed on an idle GPU: the "
                   "host's work per call, then the device's) or graph (inside a CUDA graph: the device's time)")
      ->capture_default_str();

  tpsim::cli::CalibrateOptions calibrate;
  CLI::App* calibrate_app = app.add_subcommand(
      "calibrate", "Fit a cost profile from measurement files (JSON lines from real/ or converted tables)");
  calibrate_app->require_subcommand(0, 1);
  calibrate_app
      ->add_option("measurements", calibrate.files,
                   "Measurement JSON-lines files, or nccl-tests stdout logs (their GPU from their device lines, "
                   "and what NCCL ran from NCCL's tuner where they do not say)")
      ->check(CLI::ExistingFile);
  calibrate_app->add_option("--gpu", calibrate.gpu, "GPU preset the profile is for (default: --measured-on)");
  calibrate_app->add_option("--measured-on", calibrate.measured_on,
                            "GPU preset the measurements ran on (default: the GEMM points' GPU, or the GPU the "
                            "measurements name most)");
  calibrate_app->add_option("-o,--out", calibrate.out, "Output profile YAML, or - for stdout")
      ->capture_default_str()
      ->check(tpsim::cli::output_file_path());
  calibrate_app->add_option("--base", calibrate.base,
                            "Sections the measurements do not fit come from this profile file, this GPU preset's "
                            "default profile, or none (default: the measured GPU's default profile, where it has one; "
                            "without a base every section must be fitted)");
  std::string convert_dir, convert_out;
  CLI::App* convert_app = calibrate_app->add_subcommand(
      "convert", "Convert the public CSV tables (calibrate/data/public) into measurement files");
  convert_app->add_option("data_dir", convert_dir, "Folder of the public CSV tables")
      ->required()
      ->check(CLI::ExistingDirectory);
  convert_app->add_option("-o,--out", convert_out, "Output folder for the JSON-lines files")
      ->required()
      ->check(tpsim::cli::output_folder_path());
  tpsim::cli::CalibrateOptions report;
  CLI::App* report_app = calibrate_app->add_subcommand(
      "report", "Predicted against measured for every measurement, in-sample and held out (markdown)");
  report_app->add_option("measurements", report.files, "Measurement JSON-lines files, or nccl-tests logs")
      ->required()
      ->check(CLI::ExistingFile);
  report_app->add_option("--measured-on", report.measured_on, "GPU preset the measurements ran on");
  report_app
      ->add_option("--validate-only", report.validation_only,
                   "Measurement files reported but never fitted (pure validation data)")
      ->check(CLI::ExistingFile);
  report_app->add_option(
      "--base", report.base,
      "Both fits start from this profile file, GPU preset's default profile, or none (as calibrate --base)");

  tpsim::cli::ValidateOptions validate;
  CLI::App* validate_app = app.add_subcommand(
      "validate", "Predicted against measured for composite measurements (overlap, async_tp, dtp from tpsim-real)");
  validate_app->add_option("measurements", validate.files, "Measurement JSON-lines files (and nccl-tests logs)")
      ->check(CLI::ExistingFile);
  tpsim::cli::TraceValidateOptions trace_validate;
  tpsim::cli::add_trace_validate_options(validate_app, trace_validate);
  validate_app->add_option("--profile", validate.profile, "Profile YAML, or default (the GPU's default profile)")
      ->capture_default_str();
  validate_app
      ->add_option("--holdout", validate.holdout,
                   "none: use --profile; kind: fit on the files' single-op points, validate the composites; size: "
                   "fit on the smaller half of each single-op group")
      ->capture_default_str();
  validate_app->add_option("--measured-on", validate.measured_on, "GPU preset the measurements ran on");
  validate_app->add_option("--json", validate.json_out, "Also write the results as JSON (- for stdout)")
      ->check(tpsim::cli::output_file_path());

  tpsim::cli::ShardLayoutOptions shard_layout;
  CLI::App* shard_app = app.add_subcommand("shard", "DTP layouts: which KV groups and FFN neurons share a device");
  shard_app->require_subcommand(1);
  CLI::App* layout_app = shard_app->add_subcommand(
      "layout", "Maximise the co-located affinity of an affinity file (exact balanced assignments, coordinate ascent)");
  layout_app->add_option("affinity", shard_layout.affinity, "Affinity safetensors (up.{i} [G, I], down.{i} [I, G])")
      ->required()
      ->check(CLI::ExistingFile);
  layout_app->add_option("--devices", shard_layout.request.devices, "Devices (TP degree)")
      ->required()
      ->check(tpsim::cli::integer_in(1, tpsim::model::kMaxGroupRanks));
  layout_app->add_flag("--minimise", shard_layout.request.minimise, "Write the anti-optimised layout instead");
  layout_app->add_flag("--raw", shard_layout.request.raw, "Keep raw affinity units (default: unit mass per table)");
  layout_app->add_option("--seed", shard_layout.request.seed, "First seed of the random layouts")
      ->capture_default_str();
  layout_app->add_option("--random-seeds", shard_layout.request.random_seeds, "Random layouts to compare with")
      ->capture_default_str()
      ->check(tpsim::cli::integer_in(0, std::numeric_limits<int>::max()));
  layout_app->add_option("--restarts", shard_layout.request.restarts, "Extra optimiser starts from random layouts")
      ->capture_default_str()
      ->check(tpsim::cli::integer_in(0, std::numeric_limits<int>::max()));
  layout_app->add_option("-o,--out", shard_layout.out, "Layout JSON, or - for stdout")
      ->capture_default_str()
      ->check(tpsim::cli::output_file_path());

  tpsim::cli::ShardAffinityOptions shard_affinity;
  CLI::App* affinity_app =
      shard_app->add_subcommand("affinity", "Affinity statistics of a checkpoint over calibration tokens (CPU)");
  affinity_app->add_option("checkpoint", shard_affinity.checkpoint, "Folder with config.json and model.safetensors")
      ->required()
      ->check(CLI::ExistingDirectory);
  affinity_app->add_option("--tokens", shard_affinity.tokens, "Calibration token ids: little-endian uint32")
      ->required()
      ->check(CLI::ExistingFile);
  affinity_app->add_flag("--text", shard_affinity.text,
                         "--tokens is a text file; its bytes are the token ids (no tokenizer: a byte fallback)");
  affinity_app->add_option("--seq-len", shard_affinity.sequence_length, "Tokens per causal sequence")
      ->capture_default_str()
      ->check(tpsim::cli::integer_in(1, std::numeric_limits<int>::max()));
  affinity_app->add_option("--max-tokens", shard_affinity.max_tokens, "Use at most this many tokens (0: all)")
      ->capture_default_str()
      ->check(tpsim::cli::integer_in(0, std::numeric_limits<int64_t>::max()));
  affinity_app->add_option("-o,--out", shard_affinity.out, "Affinity safetensors")
      ->required()
      ->check(tpsim::cli::output_file_path());
  tpsim::cli::ShardApplyOptions shard_apply;
  CLI::App* apply_app =
      shard_app->add_subcommand("apply", "Permute a checkpoint so each device's TP shard holds its layout's share");
  apply_app->add_option("checkpoint", shard_apply.checkpoint, "Folder with config.json and model.safetensors")
      ->required()
      ->check(CLI::ExistingDirectory);
  apply_app->add_option("layout", shard_apply.layout, "Layout JSON from tpsim shard layout")
      ->required()
      ->check(CLI::ExistingFile);
  apply_app->add_option("-o,--out", shard_apply.out, "Output folder (config.json, model.safetensors in float32)")
      ->required();

  // A word that names no command is refused before CLI11 reads it as an argument (or prints the help for it).
  if (const std::optional<std::string> unknown = tpsim::cli::unknown_command(app, argc, argv)) {
    std::cerr << "tpsim: error: " << tpsim::echo_value(*unknown, 300) << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Help prints and exits 0; a usage error is one line like any other bad input.
    if (error.get_exit_code() == 0) return app.exit(error);
    std::cerr << "tpsim: error: " << tpsim::echo_value(error.what(), 300)
              << " (tpsim --help lists the commands and options)\n";
    return 2;
  }
  // Every command's output ends in stdout: a failed write there (a full disk, a closed pipe) is an error.
  const auto dispatch = [&]() -> int {
    if (run_app->parsed()) return tpsim::cli::run_command(run);
    if (sweep_app->parsed()) return tpsim::cli::run_sweep(sweep);
    if (merge_app->parsed()) return tpsim::cli::merge_sweeps(merge_dirs, merge_out);
    if (plot_app->parsed()) return tpsim::cli::run_plot(plot_app->remaining());
    if (gemm_app->parsed()) return tpsim::cli::predict_gemm(predict, gemm_query);
    if (coll_app->parsed()) return tpsim::cli::predict_collective(predict, collective_query);
    if (convert_app->parsed()) return tpsim::cli::calibrate_convert(convert_dir, convert_out);
    if (report_app->parsed()) return tpsim::cli::calibrate_report(report);
    if (validate_app->parsed() && !trace_validate.traces.empty()) return tpsim::cli::run_trace_validate(trace_validate);
    if (validate_app->parsed() && validate.files.empty()) {
      throw tpsim::InputError("tpsim validate needs measurement files, or --trace TRACE --scenario S.yaml");
    }
    if (validate_app->parsed()) return tpsim::cli::run_validate(validate);
    if (layout_app->parsed()) return tpsim::cli::run_shard_layout(shard_layout);
    if (affinity_app->parsed()) return tpsim::cli::run_shard_affinity(shard_affinity);
    if (apply_app->parsed()) return tpsim::cli::run_shard_apply(shard_apply);
    if (calibrate_app->parsed()) {
      if (calibrate.files.empty()) {
        throw tpsim::InputError("tpsim calibrate needs measurement files (or the convert / report subcommands)");
      }
      return tpsim::cli::calibrate_fit(calibrate);
    }
    return 0;
  };
  try {
    const int code = dispatch();
    tpsim::cli::finish_stdout();
    return code;
  } catch (const tpsim::InputError& error) {
    std::cerr << "tpsim: error: " << error.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // Too large for this machine's memory: the input's size, not a fault of tpsim.
    std::cerr << "tpsim: error: out of memory: the run needs more memory than the system gives; simulate fewer layers, "
                 "micro-batches or GPUs (docs/reliability.md)\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "tpsim: internal error: " << error.what() << "\n";
    return 3;
  }
}
