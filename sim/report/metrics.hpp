// Summary numbers of a timeline: total time, compute and communication busy time, exposed communication.
#pragma once

#include <utility>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "sim/engine/timeline.hpp"

namespace tpsim::sim {

struct Metrics {
  double time_s = 0;          // makespan over all GPUs
  double compute_s = 0;       // compute stream busy, mean over GPUs
  double comm_s = 0;          // any communication (comm or copy stream) in flight, mean over GPUs
  double exposed_comm_s = 0;  // communication in flight while the compute stream is idle, mean over GPUs
  double overlap = 0;         // hidden share of communication: 1 - exposed / comm (0 without comm)
  double idle_s = 0;          // neither computing nor communicating, mean over GPUs
  double model_flops = 0;     // GEMM and attention FLOPs one GPU runs (what MFU counts)
  // The data-parallel group's collectives (FSDP, DDP): in flight, and in flight while the compute stream is idle
  // (part of exposed_comm_s, which may also hold TP communication at the same time).
  double data_comm_s = 0;
  double exposed_data_comm_s = 0;
  // The expert-parallel group's all-to-alls (MoE layers), likewise: in flight, and in flight while compute idles
  // beyond the data group's.
  double expert_comm_s = 0;
  double exposed_expert_comm_s = 0;
  // Context parallelism's K/V exchanges (CP group collectives, counted in the data group's two above as well):
  // in flight, and in flight while the compute stream is idle.
  double context_comm_s = 0;
  double exposed_context_comm_s = 0;
};

Metrics compute_metrics(const model::LayerGraph& graph, const Timeline& timeline);

// Of `spans`, the time counted twice when they run beside `cover` and beside each other: the sum of their lengths
// less what of their union `cover` leaves uncovered (a pipeline stage's reduction tails laid over its later passes).
double overlapped_length(std::vector<std::pair<double, double>> spans, std::vector<std::pair<double, double>> cover);

// a x wa + b x wb, field by field (the overlap recomputed): sums of passes, repeated passes, means.
Metrics weighted_sum(const Metrics& a, double wa, const Metrics& b, double wb);

// A module (attention or FFN of one layer, or the final ops: module -1) on one GPU: its span and
// the exposed communication charged to it: compute-stream idle time, while communication is in
// flight, that ends with one of the module's kernels starting.
struct ModuleSpan {
  int rank = 0;
  int module = 0;
  double start_s = 0;
  double end_s = 0;
  double exposed_comm_s = 0;
};

std::vector<ModuleSpan> module_exposure(const model::LayerGraph& graph, const Timeline& timeline);

}  // namespace tpsim::sim
