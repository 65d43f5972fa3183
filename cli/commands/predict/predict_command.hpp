// `tpsim predict gemm|attention|collective`: one op's predicted time without writing a scenario.
#pragma once

#include <cstdint>
#include <string>

#include "cli/commands/command.hpp"
#include "sim/cost/cost_model.hpp"

namespace tpsim::cli {

struct PredictTarget {
  std::string gpu = "h100-sxm";
  std::string calibration = "default";  // or a profile file
  bool json = false;
};

struct GemmQuery {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";  // bf16, or fp8 (e4m3 operands, bf16 output)
};

// An attention kernel's forward and backward: batch x heads x seq queries of head_dim over kv_seq keys (0: seq).
struct AttentionQuery {
  int64_t batch = 1, heads = 16, kv_heads = 0, queries = 0, keys = 0, head_dim = 128;  // kv_heads 0: heads
  std::string mask = "causal";  // causal (the queries the last of the keys) or none
  std::string dtype = "bf16";   // bf16, or fp8 (the forward's Q, K, V in e4m3)
  std::string kernel;           // fa3, fa2, cudnn, ...; empty: the profile's own
};

struct CollectiveQuery {
  std::string topology = "nvswitch";
  int ranks = 8;
  std::string kind = "allreduce";  // allreduce | allgather | reducescatter | alltoall | sendrecv
  std::string bytes;               // "1048576", "64MiB", "2GB", ...
  std::string min_bytes;           // or a sweep, as nccl-tests' -b, -e, -f
  std::string max_bytes;
  double factor = 2;
  std::string algorithm = "nccl";        // nccl | auto | ring | one_shot | two_shot | nvls | tree
  std::string protocol = "auto";         // auto | simple | ll | ll128 (NCCL_PROTO, ring steps)
  double nic_GBps = 0;                   // ib-rail: each GPU's NIC, one direction (0: 50 GB/s)
  double oversubscription = 1;           // ib-rail: the fat tree above the rail switches (1: non-blocking)
  std::string as_called = "nccl-tests";  // nccl-tests | torch | graph (sim/cost/call_timing.hpp)
};

// The cost model of the target's GPU preset and profile (one NVSwitch node).
sim::CostModel predict_cost_model(const PredictTarget& target);
int predict_gemm(const PredictTarget& target, const GemmQuery& query);
int predict_attention(const PredictTarget& target, const AttentionQuery& query);
int predict_collective(const PredictTarget& target, const CollectiveQuery& query);

// "4096", "64KiB", "1.5MB", "2GiB" -> bytes (KB, MB, GB are 1e3, 1e6, 1e9; KiB, MiB, GiB powers of 2).
double parse_bytes(const std::string& text);

// Registers `tpsim predict gemm | attention | collective` and their options on `app`.
void add_predict_command(CLI::App& app, Commands& commands);

}  // namespace tpsim::cli
