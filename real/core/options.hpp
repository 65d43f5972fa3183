// The tpsim-real command line: subcommands shapes, gemm, collective, memcpy, overlap, async-tp and dtp, their
// options, and the checks that turn bad values into one clear line before any GPU work starts.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "real/core/collective.hpp"
#include "real/core/gemm_shapes.hpp"

namespace tpsim::real {

// How each point is timed (METHOD.md): warm-up launches, then `samples` samples of `launches`
// back-to-back launches each (0: enough launches for a sample of at least `min_sample_s`).
struct TimingOptions {
  int warmup = 5;
  int samples = 30;
  int launches = 0;
  // CUDA events resolve about 0.5 us (cudaEventElapsedTime's documentation): 200 us samples keep
  // that under 0.25%.
  double min_sample_s = 200e-6;
};

// Which GPUs take part. One process: `devices` local GPUs (0: all), a thread and a rank each.
// Several processes (one per GPU): the NCCL unique id travels through `id_file` (rank 0 writes it)
// or through MPI when built with it.
struct LaunchOptions {
  int devices = 0;
  std::string id_file;
  bool mpi = false;
  int rank = -1;
  int nranks = 0;
  int local_device = -1;  // -1: rank modulo the visible GPUs

  bool multi_process() const { return mpi || !id_file.empty(); }
};

// Message sizes: an explicit list, or the geometric sweep from min to max.
struct SizeRequest {
  std::vector<int64_t> sizes;
  int64_t min_bytes = 0;
  int64_t max_bytes = 0;
  double factor = 2;

  // The sizes to run, multiples of `alignment`: a listed size that is not one is an InputError;
  // the sweep rounds down.
  std::vector<int64_t> resolve(int64_t alignment) const;
};

struct RealOptions {
  std::string command;  // shapes, gemm, collective, memcpy, overlap, async-tp, dtp
  std::string json_out;
  std::string gpu;  // measurement "gpu" field; empty: from the device name
  uint64_t seed = 1;
  TimingOptions timing;
  LaunchOptions launch;
  // GEMM shapes (gemm, overlap, async-tp, dtp) and the GEMM operand type
  std::vector<GemmCase> shapes;
  std::string dtype = "bf16";  // bf16 or fp8 (e4m3 operands, bf16 output)
  // collective, memcpy, overlap
  std::vector<Collective> collectives;
  std::string collective_dtype = "float32";
  std::string placement = "both";  // out (of place), in (place) or both
  int nodes = 1;                   // collective: nodes the ranks span, as many GPUs each (recorded)
  double nic_GBps = 0;             // collective across nodes: each GPU's NIC, one direction (0: not stated)
  // collective: calls captured in one CUDA graph whose replays are timed (the device's time per call, timed_as
  // graph; nccl-tests -G); 0: calls launched back to back (timed_as nccl-tests).
  int graph_calls = 0;
  SizeRequest sizes;
  std::vector<std::string> memcpy_paths;  // device, copy_kernel, peer; or peer_all_ranks alone
  std::vector<std::string> partners;      // overlap: memcpy_device, copy_kernel, memcpy_peer, or a collective
  int copy_blocks = 0;                    // copy kernel's thread blocks; 0: one per SM
  bool partner_first = false;             // overlap: launch the partner before the GEMM (it holds SMs first)
  // async-tp
  std::vector<std::string> patterns;  // allgather_gemm, gemm_reducescatter
  std::vector<int> chunks;
  std::vector<std::string> transports;  // nccl, copy_engine
  // launch
  // Empty kernels per chain: at 2-5 us per launch a chain lasts milliseconds, thousands of times the
  // event timer's 0.5 us resolution (see min_sample_s).
  int kernels = 1000;
  // dtp
  int modules = 8;
  std::vector<int> deltas;
};

// Thrown after CLI11 has printed the help (code 0).
class CommandLineExit : public std::exception {
 public:
  explicit CommandLineExit(int code) : code_(code) {}
  int code() const { return code_; }
  const char* what() const noexcept override { return "command line handled by CLI11"; }

 private:
  int code_;
};

// Parses argv (argv[0] is the program). Throws CommandLineExit for help, InputError for usage
// errors (unknown flag, missing option or subcommand) and bad values.
RealOptions parse_options(const std::vector<std::string>& argv);

}  // namespace tpsim::real
