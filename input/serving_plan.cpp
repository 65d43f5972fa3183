// Serving plan reader: the workload's lengths and targets, each refused at its location with what is valid.
#include "input/serving_plan.hpp"

namespace tpsim::model {
namespace {

// Longer prompts or outputs than this are a typo (the longest published contexts are a few million tokens).
constexpr int64_t kMaxServingTokens = int64_t{1} << 24;
// A latency target above an hour is a typo, not a service.
constexpr double kMaxTargetSeconds = 3600.0;

const std::vector<std::string> kServingWorkload = {"phase", "context_len", "gen_len", "targets", "batching"};
const std::vector<std::string> kTargets = {"ttft_s", "tpot_s"};
const std::vector<std::string> kServingSearch = {
    "tp", "ep", "batch", "dtype", "dispatcher", "two_batch_overlap", "cuda_graphs"};

}  // namespace

const std::vector<std::string>& serving_workload_keys() {
  return kServingWorkload;
}

const std::vector<std::string>& serving_search_keys() {
  return kServingSearch;
}

ServingWorkload read_serving_workload(const YamlReader& in, const YAML::Node& node) {
  in.expect_map(node, "workload (phase serve)", kServingWorkload);
  ServingWorkload out;
  if (node["context_len"]) {
    out.context_len = in.int_in(node["context_len"], "workload.context_len (prompt tokens)", 1, kMaxServingTokens);
  }
  // The first output token comes from the prefill; a time per output token needs a decode step after it.
  if (node["gen_len"]) {
    out.gen_len = in.int_in(node["gen_len"], "workload.gen_len (output tokens)", 2, kMaxServingTokens);
  }
  if (node["batching"]) out.batching = in.choice_of(node["batching"], "workload.batching", kBatchingNames);
  if (const YAML::Node targets = node["targets"]) {
    in.expect_map(targets, "workload.targets", kTargets);
    if (targets["ttft_s"]) {
      out.ttft_s = in.positive_number(targets["ttft_s"], "workload.targets.ttft_s (seconds)", kMaxTargetSeconds);
    }
    if (targets["tpot_s"]) {
      out.tpot_s = in.positive_number(targets["tpot_s"], "workload.targets.tpot_s (seconds)", kMaxTargetSeconds);
    }
  }
  return out;
}

}  // namespace tpsim::model
