// Expert parallelism of an MoE model (parallelism.ep) and how its router spreads tokens (the scenario's `moe:`
// section): balanced, or skewed by a Zipf law over each layer's experts, with or without a capacity that drops
// the tokens above it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace tpsim::model {

enum class Routing : uint8_t { kBalanced, kZipf, kFromFile };
inline constexpr EnumName<Routing> kRoutingNames[] = {
    {Routing::kBalanced, "balanced"},
    {Routing::kZipf, "zipf"},
    {Routing::kFromFile, "from_file"},
};
// How the dispatch and combine all-to-alls run: NCCL's point-to-point calls, one message per token copy (Megatron's
// all-to-all dispatcher); or DeepEP's normal kernels, one message per token and destination GPU, across nodes
// once per token and destination node, forwarded over NVLink there (deepseek-ai/DeepEP).
enum class Dispatcher : uint8_t { kNccl, kDeepEp };
inline constexpr EnumName<Dispatcher> kDispatcherNames[] = {
    {Dispatcher::kNccl, "nccl"},
    {Dispatcher::kDeepEp, "deepep"},
};
// Which of DeepEP's kernels run: its low-latency ones in decode steps and its normal ones otherwise (auto, as
// SGLang's --deepep-mode auto chooses), or one of them always (low_latency only in inference). The low-latency
// kernels send one message per token copy (no deduplication), fp8 on dispatch, and permute and combine the copies
// inside the kernels.
enum class DeepEpMode : uint8_t { kAuto, kNormal, kLowLatency };
inline constexpr EnumName<DeepEpMode> kDeepEpModeNames[] = {
    {DeepEpMode::kAuto, "auto"},
    {DeepEpMode::kNormal, "normal"},
    {DeepEpMode::kLowLatency, "low_latency"},
};

struct ExpertParallel {
  // GPUs each layer's experts are split over (parallelism.ep), consecutive on the job's placement (TP
  // innermost, then the data-parallel replicas: Megatron's MoE parallel folding with expert TP 1); every expert
  // lives whole on one GPU.
  int degree = 1;
  // Expert TP inside the group (parallelism.etp; Megatron's expert tensor parallelism with EP): each expert sliced
  // over `tensor_degree` consecutive GPUs; the all-to-all runs between the GPUs of the same slice, `tensor_degree`
  // apart, and each slice's GPUs all-gather what they received (and reduce-scatter their partial outputs).
  int tensor_degree = 1;
  // The GPUs each expert is sliced over inside the group (1 without one: ep 1 is expert TP over the TP group).
  int slices() const { return degree > 1 ? tensor_degree : 1; }
  Routing routing = Routing::kBalanced;
  // zipf: the expert of popularity rank i (0-based, a seeded shuffle of each layer's experts) gets a share of
  // the tokens proportional to 1 / (i + 1)^zipf_s.
  double zipf_s = 0;
  // drop: an expert takes at most capacity_factor x its balanced share of the tokens and drops the rest
  // (GShard / Switch capacity); else dropless (every routed token computed).
  bool drop = false;
  double capacity_factor = 0;
  uint64_t seed = 1;
  // from_file: the routing file as the scenario names it, and each layer's expert shares read from it
  // (moe_routing_file.hpp).
  std::string routing_file;
  std::vector<std::vector<double>> layer_shares;
  Dispatcher dispatcher = Dispatcher::kNccl;
  DeepEpMode deepep_mode = DeepEpMode::kAuto;
  // GPUs per node of the job's fabric (set by the simulation before it builds programs; 0: one node), which
  // decides the nodes an expert-parallel group spans.
  int node_gpus = 0;

  bool operator==(const ExpertParallel&) const = default;  // every field (a memo's key)
};

// Whether `tp` ranks with `ep` expert-parallel GPUs split every expert over the TP group (expert TP): ep 1 under
// tp > 1, as vLLM and SGLang run MoE by default.
inline bool experts_split_over_tp(int tp, int ep) {
  return ep == 1 && tp > 1;
}

std::string to_string(Routing routing);
std::string to_string(Dispatcher dispatcher);
std::string to_string(DeepEpMode mode);
// Whether a pass of `new_tokens` per sequence in an inference phase (or not) runs DeepEP's low-latency kernels.
bool runs_low_latency(const ExpertParallel& ep, bool inference, int64_t new_tokens);

// "balanced", "zipf(1.2)", "from_file(r.csv)", "zipf(1.2), capacity 1.25 with drops".
std::string to_string(const ExpertParallel& ep);

}  // namespace tpsim::model
