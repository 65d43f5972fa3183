// Where a pass's time goes, per GPU (mean over ranks): by module kind (attention blocks, FFN blocks, the
// rest) and by op kind (GEMM, attention kernel, memory-bound kernels, communication), with the exposed
// communication charged to each module (metrics.hpp module_exposure). Op durations are summed, so
// overlapped work counts in full in each kind.
#pragma once

#include <string>
#include <vector>

#include "sim/run/scenario_run.hpp"

namespace tpsim::sim {

struct BreakdownRow {
  std::string module;  // "attention", "ffn", "other" (op lists, final ops), "total"
  double gemm_s = 0;
  double attention_s = 0;
  double memory_s = 0;
  double communication_s = 0;  // collectives and exchange steps, on their streams
  double exposed_comm_s = 0;
};

// Whether the pass is an op list (phase: ops), whose ops belong to no layer.
bool is_op_list(const PassTrace& pass);

// Rows attention, ffn, other (those with any time), then their total.
std::vector<BreakdownRow> breakdown(const PassTrace& pass);

// A training step's wall time by stage (forward, backward, recompute, optimizer) on GPU 0: each
// compute-stream op is charged the time from the previous compute op's end to its own end (the waits it
// had included), so the stages sum to the compute stream's end. Stages without ops are left out.
std::vector<std::pair<std::string, double>> stage_times(const PassTrace& pass);

// Each op of a pass on GPU 0 (the ranks are symmetric), in op order: for op lists.
struct OpTiming {
  std::string name;
  std::string stream;
  double start_s = 0;
  double end_s = 0;
};
std::vector<OpTiming> op_timings(const PassTrace& pass);

}  // namespace tpsim::sim
