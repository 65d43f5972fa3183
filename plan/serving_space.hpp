// The candidate layouts of a serving plan (workload.phase serve): every combination of tp, the expert-parallel group
// (MoE models; ep / tp attention data-parallel ranks beside it when ep > tp), the sequences each TP group serves at
// once, the dispatcher and two-batch overlap (MoE under ep > 1), the dtype and CUDA graphs, each written as the
// generate scenario `tpsim run` reads: a prefill of every sequence's prompt (its time is the TTFT), then the decode
// steps (their mean is the TPOT).
#pragma once

#include <string>
#include <vector>

#include "input/plan_file.hpp"
#include "model/layers/arch_spec.hpp"

namespace tpsim::plan {

struct ServingLayout {
  int gpus = 1;   // the plan's GPUs: replicas() copies of one serving unit
  int nodes = 1;  // of one serving unit: what the scenario simulates
  int tp = 1, ep = 1;
  int batch = 1;  // sequences each TP group serves at once (the scenario's workload.batch)
  std::string dtype = "bf16";
  std::string tp_mode = "tp";       // sp where an MoE model's experts are split over ep > 1 under tp > 1
  std::string dispatcher = "nccl";  // MoE under ep > 1 only
  bool two_batch_overlap = false;   // MoE under ep > 1 only
  bool cuda_graphs = true;
  int unit_gpus() const { return tp > ep ? tp : ep; }         // one serving unit: the TP group, or the expert group
  int attention_dp() const { return ep > tp ? ep / tp : 1; }  // TP groups of one unit, each its own sequences
  int replicas() const { return gpus / unit_gpus(); }
  // Sequences served at once on the plan's GPUs.
  int64_t sequences() const { return static_cast<int64_t>(batch) * (gpus / tp); }
  std::string program_key() const;
};

// "tp4 ep8 adp2 b64 deepep tbo fp8": the layout in one line (eager: CUDA graphs off).
std::string describe(const ServingLayout& layout);

struct ServingCandidate {
  size_t index = 0;  // in enumeration order: what --explain N names
  ServingLayout layout;
};

// Every candidate of a serving plan, in a fixed order (GPU count, tp, ep, batch, dtype, dispatcher, two-batch
// overlap, CUDA graphs), the defaults filled in for the model and hardware.
std::vector<ServingCandidate> enumerate_serving_candidates(const model::PlanSpec& plan, const model::ArchSpec& arch,
                                                           int gpus_per_node);
// The generate scenario of a candidate (model, hardware, calibration and implementation as the plan wrote them).
std::string serving_scenario_text(const model::PlanSpec& plan, const ServingCandidate& candidate, int gpus_per_node);

}  // namespace tpsim::plan
