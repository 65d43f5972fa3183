// The serving half of a plan file (`workload: {phase: serve}`): the requests a serving deployment answers (prompt and
// output lengths) and its latency targets (time to first token, time per output token), read with located errors;
// and the YAML text of the plan's nodes that a candidate's scenario repeats as written. plan/serving_space.hpp
// enumerates the layouts.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.hpp"
#include "input/yaml_reader.hpp"

namespace tpsim::model {

// How the deployment admits requests: continuously (a server at its batch of concurrent sequences, each finished
// one replaced by a new request, as vLLM and SGLang run) or as one static batch admitted at once.
enum class Batching { kContinuous, kStatic };
inline constexpr EnumName<Batching> kBatchingNames[] = {
    {Batching::kContinuous, "continuous"},
    {Batching::kStatic, "static"},
};

struct ServingWorkload {
  int64_t context_len = 2048;    // prompt tokens of each request (the generate phase's context_len)
  int64_t gen_len = 256;         // output tokens of each request, the first from the prefill (its gen_len)
  std::optional<double> ttft_s;  // targets.ttft_s: the longest time to first token; absent: none
  std::optional<double> tpot_s;  // targets.tpot_s: the longest mean time per output token; absent: none
  Batching batching = Batching::kContinuous;
};

// The keys of a serving plan's workload and search sections.
const std::vector<std::string>& serving_workload_keys();
const std::vector<std::string>& serving_search_keys();

// Reads a `workload: {phase: serve, ...}` mapping; throws InputError at file:line:col naming what is valid.
ServingWorkload read_serving_workload(const YamlReader& in, const YAML::Node& workload);

}  // namespace tpsim::model
