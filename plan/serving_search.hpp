// The search of a serving plan: enumerate its layouts (plan/serving_space.hpp), prune before simulating
// (divisibility, placement, memory: the weights and runtime alone above the GPU's usable HBM, kv cache: the KV cache
// and activations of the batch above it, both by the closed form `tpsim run --memory` reports), simulate each
// survivor's generate scenario in worker processes (plan/plan_workers.hpp), check it against the latency targets,
// rank by output tokens/s per GPU among those that meet them, and mark the Pareto front of tokens/s per user (1 /
// TPOT) against tokens/s per GPU.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "input/plan_file.hpp"
#include "plan/plan_search.hpp"
#include "plan/serving_space.hpp"

namespace tpsim::plan {

// A candidate's latency against the plan's targets.
struct TargetCheck {
  bool meets = true;
  std::string binding;              // the target nearest its limit (ttft or tpot); empty without targets
  double use = 0;                   // the binding target's value over its limit (above 1: missed)
  std::vector<std::string> missed;  // the targets missed, ttft before tpot
};
TargetCheck check_targets(const model::ServingWorkload& serve, double ttft_s, double tpot_s);

struct ServingRow {
  size_t index = 0;
  ServingLayout layout;
  double time_s = 0;                          // the whole generate: the prefill and every decode step
  double prefill_s = 0, decode_step_s = 0;    // as simulated: the batch's prefill, its mean decode step
  double ttft_s = 0, tpot_s = 0;              // as served under the plan's batching (plan/serving_latency.hpp)
  double tokens_per_s_per_gpu = 0;            // output tokens over the generate's time, per GPU of the TP group
  double memory_bytes = 0;                    // per GPU
  double exposed_tp_s = 0, exposed_ep_s = 0;  // over the generate
  TargetCheck targets;
  bool front = false;  // on the Pareto front of tokens/s per user against tokens/s per GPU
  double tokens_per_s_per_user() const { return 1.0 / tpot_s; }
};

// Marks each row on the Pareto front: no other row has at least its tokens/s per user and per GPU and more of one
// (rows at the same point are on it together). Whatever the targets.
void mark_pareto_front(std::vector<ServingRow>& rows);

struct ServingResult : SearchTotals {
  std::vector<ServingRow> rows;  // those meeting the targets ranked first, then those missing one
  size_t meeting = 0;            // rows that meet every target
};

// A row's numbers as JSON (what workers send and journals keep: "variant" names the layout, "time_s" the generate,
// "prefill_s" and "decode_step_s" as simulated; the served TTFT and TPOT follow from them and the plan).
nlohmann::ordered_json serving_row_numbers(const ServingRow& row);

// Whether (and why not) a candidate can run, without simulating it: empty reason when it can.
Verdict check_serving_candidate(const model::PlanSpec& plan, const ServingCandidate& candidate, int gpus_per_node);

// Options as a training plan's (rank_by is not read: a serving plan ranks by tokens/s per GPU).
ServingResult run_serving_plan(const model::PlanSpec& plan, const PlanOptions& options);

}  // namespace tpsim::plan
