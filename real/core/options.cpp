// CLI11 definitions of the tpsim-real subcommands and the conversion of their raw values.
#include "real/core/options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "base/input_error.hpp"
#include "real/core/size_sweep.hpp"

namespace tpsim::real {
namespace {

// Option values as typed, converted after parsing so that every bad value gets one clear line.
struct RawValues {
  std::vector<std::string> shapes;
  std::string shapes_file;
  std::string scenario;
  std::vector<std::string> collectives;
  std::vector<std::string> sizes;
  std::string min_bytes = "8", max_bytes = "128MiB";             // collective sweep (nccl-tests-like)
  std::string copy_min_bytes = "1MiB", copy_max_bytes = "1GiB";  // memcpy sweep
  std::string partner_bytes;
};

void add_common(CLI::App* app, RealOptions& o) {
  app->add_option("--json", o.json_out, "Write the measurements as JSON lines here (- for stdout)");
  app->add_option("--gpu", o.gpu, "GPU name written into each point (default: the preset matching the device)");
  app->add_option("--seed", o.seed, "Seed of the random inputs")->capture_default_str();
  app->add_option("--warmup", o.timing.warmup, "Warm-up launches before timing")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_option("--samples", o.timing.samples, "Timed samples per point")
      ->capture_default_str()
      ->check(CLI::Range(3, 100000));
  app->add_option("--launches", o.timing.launches, "Launches per sample (0: enough for 200 us)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void add_launch(CLI::App* app, RealOptions& o) {
  app->add_option("--devices", o.launch.devices, "Local GPUs to use, one rank each (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_option("--id-file", o.launch.id_file,
                  "One process per GPU: the NCCL unique id goes through this file on a shared filesystem");
  app->add_flag("--mpi", o.launch.mpi, "One process per GPU, launched by mpirun (needs a build with MPI)");
  app->add_option("--rank", o.launch.rank, "This process's rank (with --id-file)");
  app->add_option("--nranks", o.launch.nranks, "Number of processes (with --id-file)");
  app->add_option("--local-device", o.launch.local_device, "GPU of this process (default: rank mod visible GPUs)");
}

void add_shapes(CLI::App* app, RawValues& raw, const std::string& what) {
  app->add_option("--shape", raw.shapes, what + " as MxNxK (Y[M,N] = X[M,K] W[N,K]^T); repeatable");
  app->add_option("--shapes-file", raw.shapes_file, "Shapes, one MxNxK per line (what `tpsim-real shapes` prints)")
      ->check(CLI::ExistingFile);
}

std::vector<GemmCase> shapes_of_scenario(const std::string& file) {
#ifdef TPSIM_REAL_SCENARIOS
  return scenario_gemm_shapes(file);
#else
  throw InputError(
      "--scenario " + file +
      ": this tpsim-real was built with TPSIM_REAL_ONLY (no simulator); run "
      "`tpsim-real shapes --scenario FILE > shapes.txt` on a full build and pass --shapes-file shapes.txt");
#endif
}

void add_sizes(CLI::App* app, std::string& min_bytes, std::string& max_bytes, std::vector<std::string>& sizes) {
  app->add_option("-b,--min-bytes", min_bytes, "Smallest size of the sweep")->capture_default_str();
  app->add_option("-e,--max-bytes", max_bytes, "Largest size of the sweep")->capture_default_str();
  app->add_option("--sizes", sizes, "Explicit sizes instead of the sweep (e.g. 64KiB 1MiB)");
}

template <typename T>
void require_each_in(const std::vector<T>& values, const std::vector<T>& valid, const std::string& option) {
  for (const T& v : values) {
    if (std::find(valid.begin(), valid.end(), v) != valid.end()) continue;
    std::string list;
    for (const T& x : valid) list += (list.empty() ? "" : ", ") + x;
    throw InputError(option + " " + v + ": valid: " + list);
  }
}

void convert_shapes(const RawValues& raw, RealOptions& o, const std::string& fallback) {
  for (const std::string& text : raw.shapes) o.shapes.push_back(parse_gemm_shape(text));
  if (!raw.shapes_file.empty()) {
    for (const GemmCase& c : read_shapes_file(raw.shapes_file)) o.shapes.push_back(c);
  }
  if (!raw.scenario.empty()) {
    for (const GemmCase& c : shapes_of_scenario(raw.scenario)) o.shapes.push_back(c);
  }
  if (o.shapes.empty() && !fallback.empty()) o.shapes.push_back(parse_gemm_shape(fallback));
  if (o.shapes.empty()) {
    throw InputError("tpsim-real " + o.command + " needs --shape MxNxK, --shapes-file FILE or --scenario FILE");
  }
}

void convert_sizes(const std::string& min_bytes, const std::string& max_bytes, const std::vector<std::string>& sizes,
                   RealOptions& o) {
  for (const std::string& text : sizes) o.sizes.sizes.push_back(parse_size(text, "--sizes"));
  o.sizes.min_bytes = parse_size(min_bytes, "--min-bytes");
  o.sizes.max_bytes = parse_size(max_bytes, "--max-bytes");
  if (o.sizes.sizes.empty()) o.sizes.resolve(1);  // checks min <= max and the factor now
}

void check_launch(const RealOptions& o) {
  const LaunchOptions& l = o.launch;
  if (!l.id_file.empty() && l.mpi) throw InputError("--id-file and --mpi are two ways to launch; give one");
  if (!l.id_file.empty() && (l.rank < 0 || l.nranks < 1 || l.rank >= l.nranks)) {
    throw InputError("--id-file needs --rank R and --nranks N with 0 <= R < N");
  }
  if (l.multi_process() && l.devices > 1) {
    throw InputError("--devices is for one process; with --id-file or --mpi each process drives one GPU");
  }
}

CLI::App* add_gemm_command(CLI::App& app, RawValues& raw) {
  CLI::App* gemm = app.add_subcommand("gemm", "cuBLASLt GEMMs (bf16 or fp8) over given shapes or a scenario's");
  add_shapes(gemm, raw, "GEMM shape");
  gemm->add_option("--scenario", raw.scenario,
                   "Measure every GEMM shape of this scenario's layer graphs (at every point of its sweep)")
      ->check(CLI::ExistingFile);
  return gemm;
}

void add_shapes_command(CLI::App& app, RawValues& raw) {
  CLI::App* shapes = app.add_subcommand(
      "shapes", "Print a scenario's GEMM shapes, at every point of its sweep, one per line (no GPU needed)");
  shapes->add_option("--scenario", raw.scenario, "Scenario file")->required()->check(CLI::ExistingFile);
}

CLI::App* add_collective_command(CLI::App& app, RawValues& raw, RealOptions& o) {
  CLI::App* collective =
      app.add_subcommand("collective", "NCCL collectives over a size sweep (nccl-tests conventions)");
  collective->add_option("--op", raw.collectives, "allreduce, allgather, reducescatter, alltoall, sendrecv; repeatable")
      ->required();
  collective->add_option("--dtype", o.collective_dtype, "float32 or bf16")->capture_default_str();
  collective->add_option("--placement", o.placement, "out, in or both (out-of-place, in-place)")->capture_default_str();
  // Sanity bounds that catch a wrong unit or a typo, not hardware limits: up to 2^20 nodes; a NIC from
  // 1 MB/s to 1 PB/s (today's are 25 to 100 GB/s).
  collective->add_option("--nodes", o.nodes, "Nodes the ranks span, as many GPUs each (recorded for the network fit)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  collective->add_option("--nic-GBps", o.nic_GBps, "Across nodes: each GPU's NIC, one direction, in GB/s")
      ->check(CLI::Range(0.001, 1e6));
  collective->add_option("-f,--factor", o.sizes.factor, "Step of the sweep")->capture_default_str();
  // Up to 10,000 calls a graph: more only lengthens capture (nccl-tests' -G takes tens).
  collective
      ->add_option("--graph", o.graph_calls,
                   "Capture this many calls in a CUDA graph and time its replays: the device's time per call, without "
                   "the host's launch path (as nccl-tests -G); 0 launches them back to back")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  add_sizes(collective, raw.min_bytes, raw.max_bytes, raw.sizes);
  return collective;
}

CLI::App* add_memcpy_command(CLI::App& app, RawValues& raw, RealOptions& o) {
  CLI::App* memcpy = app.add_subcommand("memcpy", "HBM and peer copy bandwidth: copy engine and copy kernel");
  memcpy->add_option(
      "--path", o.memcpy_paths,
      "device, copy_kernel, peer; repeatable (default: all the GPUs allow); or peer_all_ranks alone: every GPU "
      "pulls from each other GPU in turn, all at once (async TP's all-gather)");
  memcpy->add_option("-f,--factor", o.sizes.factor, "Step of the sweep")->capture_default_str();
  memcpy->add_option("--copy-blocks", o.copy_blocks, "Copy kernel thread blocks (0: one per SM)");
  add_sizes(memcpy, raw.copy_min_bytes, raw.copy_max_bytes, raw.sizes);
  return memcpy;
}

CLI::App* add_overlap_command(CLI::App& app, RawValues& raw, RealOptions& o) {
  CLI::App* overlap = app.add_subcommand("overlap", "A GEMM concurrent with a copy or collective: alone and together");
  add_shapes(overlap, raw, "GEMM shape (default 8192x8192x8192)");
  overlap
      ->add_option("--partner", o.partners, "memcpy_device, copy_kernel, memcpy_peer, or a collective name; repeatable")
      ->required();
  overlap->add_option("--bytes", raw.partner_bytes, "Bytes the partner moves (default 256MiB)");
  overlap->add_option("--copy-blocks", o.copy_blocks,
                      "Copy kernel thread blocks (0: 16, a typical NCCL channel count)");
  overlap->add_flag("--partner-first", o.partner_first,
                    "Launch the partner before the GEMM, so that its blocks hold SMs when the GEMM starts");
  return overlap;
}

CLI::App* add_async_tp_command(CLI::App& app, RawValues& raw, RealOptions& o) {
  CLI::App* async_tp = app.add_subcommand("async-tp", "Chunked AG+GEMM and GEMM+RS pipelines against the unchunked op");
  add_shapes(async_tp, raw, "Per-rank unchunked GEMM (AG+GEMM: M = all tokens; GEMM+RS: K = the rank's slice)");
  async_tp->add_option("--pattern", o.patterns, "allgather_gemm, gemm_reducescatter; repeatable")->required();
  async_tp->add_option("--chunks", o.chunks, "GEMM pieces per rank, multiples of the rank count; repeatable")
      ->required()
      ->check(CLI::PositiveNumber);
  async_tp->add_option("--transport", o.transports, "nccl (send/recv) or copy_engine (peer copies); repeatable");
  return async_tp;
}

CLI::App* add_dtp_command(CLI::App& app, RawValues& raw, RealOptions& o) {
  CLI::App* dtp = app.add_subcommand(
      "dtp",
      "A chain of GEMM modules run as tp_mode dtp runs them: module m's all-reduce is added by module m+1+delta");
  add_shapes(dtp, raw, "Per-rank module GEMM (N is the residual width, K <= N the rank's input slice)");
  dtp->add_option("--modules", o.modules, "Modules in the chain")->capture_default_str()->check(CLI::Range(1, 4096));
  dtp->add_option("--delta", o.deltas, "A scenario's dtp delta (0: blocking TP); repeatable")
      ->required()
      ->check(CLI::Range(0, 4096));
  return dtp;
}

CLI::App* add_launch_command(CLI::App& app, RealOptions& o) {
  CLI::App* launch =
      app.add_subcommand("launch", "Host time per kernel launch and per cross-stream wait: chains of empty kernels");
  // Two kernels at least: the cross-stream chain alternates between two streams. The upper bound only
  // catches typos (a million launches take seconds).
  launch->add_option("--kernels", o.kernels, "Empty kernels per chain")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000000));
  return launch;
}

// Parses argv (argv[0] first) into the options bound to app; help and version exit through CommandLineExit.
void parse_command_line(CLI::App& app, const std::vector<std::string>& argv) {
  std::vector<std::string> args(argv.rbegin(), argv.rend() - 1);  // CLI11 takes them reversed, without argv[0]
  try {
    app.parse(args);
  } catch (const CLI::ParseError& error) {
    // Help and version print and exit 0; a usage error is one line like any other bad input.
    if (error.get_exit_code() == 0) throw CommandLineExit(app.exit(error));
    throw InputError(std::string(error.what()) + " (tpsim-real --help lists the commands and options)");
  }
}

// Converts and checks the values the chosen command (o.command) uses.
void convert_values(const RawValues& raw, RealOptions& o) {
  if (o.dtype != "bf16" && o.dtype != "fp8") throw InputError("--dtype " + o.dtype + ": valid: bf16, fp8");
  check_launch(o);
  if (o.command == "gemm" || o.command == "shapes") convert_shapes(raw, o, "");
  if (o.command == "overlap" || o.command == "async-tp" || o.command == "dtp") convert_shapes(raw, o, "8192x8192x8192");
  if (o.command == "collective") {
    for (const std::string& name : raw.collectives) o.collectives.push_back(parse_collective(name));
    collective_element_bytes(o.collective_dtype);
    require_each_in(std::vector<std::string>{o.placement}, {"out", "in", "both"}, "--placement");
    convert_sizes(raw.min_bytes, raw.max_bytes, raw.sizes, o);
  }
  if (o.command == "memcpy") {
    require_each_in(o.memcpy_paths, {"device", "copy_kernel", "peer", "peer_all_ranks"}, "--path");
    const bool all_ranks =
        std::find(o.memcpy_paths.begin(), o.memcpy_paths.end(), "peer_all_ranks") != o.memcpy_paths.end();
    if (all_ranks && o.memcpy_paths.size() > 1) {
      throw InputError("--path peer_all_ranks drives every GPU of the process at once: give it alone");
    }
    convert_sizes(raw.copy_min_bytes, raw.copy_max_bytes, raw.sizes, o);
  }
  if (o.command == "overlap") {
    for (const std::string& p : o.partners) {
      if (p != "memcpy_device" && p != "copy_kernel" && p != "memcpy_peer") parse_collective(p);
    }
    o.sizes.sizes = {parse_size(raw.partner_bytes.empty() ? "256MiB" : raw.partner_bytes, "--bytes")};
  }
  if (o.command == "async-tp") {
    require_each_in(o.patterns, {"allgather_gemm", "gemm_reducescatter"}, "--pattern");
    if (o.transports.empty()) o.transports = {"nccl"};
    require_each_in(o.transports, {"nccl", "copy_engine"}, "--transport");
  }
  if (o.copy_blocks < 0) throw InputError("--copy-blocks must be 0 (one per SM) or more");
}

}  // namespace

std::vector<int64_t> SizeRequest::resolve(int64_t alignment) const {
  if (sizes.empty()) return geometric_sizes(min_bytes, max_bytes, factor, alignment);
  for (int64_t size : sizes) {
    if (size % alignment != 0) {
      throw InputError("--sizes " + std::to_string(size) + ": must be a multiple of " + std::to_string(alignment) +
                       " B here (one element per rank)");
    }
  }
  return sizes;
}

RealOptions parse_options(const std::vector<std::string>& argv) {
  RealOptions o;
  RawValues raw;
  CLI::App app{"tpsim-real: measure GEMMs, collectives, copies and overlapped pipelines on this machine's GPUs",
               "tpsim-real"};
  app.require_subcommand(1);

  CLI::App* gemm = add_gemm_command(app, raw);
  add_shapes_command(app, raw);
  CLI::App* collective = add_collective_command(app, raw, o);
  CLI::App* memcpy = add_memcpy_command(app, raw, o);
  CLI::App* overlap = add_overlap_command(app, raw, o);
  CLI::App* async_tp = add_async_tp_command(app, raw, o);
  CLI::App* dtp = add_dtp_command(app, raw, o);
  CLI::App* launch = add_launch_command(app, o);
  for (CLI::App* sub : {gemm, collective, memcpy, overlap, async_tp, dtp, launch}) {
    add_common(sub, o);
    add_launch(sub, o);
  }
  for (CLI::App* sub : {gemm, overlap, async_tp, dtp}) {
    sub->add_option("--dtype", o.dtype, "GEMM operands: bf16 or fp8 (e4m3, bf16 output)")->capture_default_str();
  }

  parse_command_line(app, argv);
  for (CLI::App* sub : app.get_subcommands()) o.command = sub->get_name();
  convert_values(raw, o);
  return o;
}

}  // namespace tpsim::real
