// What the MoE tests share: Qwen3-30B-A3B at tp 2 and ep 8, a workload's expert parallelism, Zipf routing.
#pragma once

#include <cstdint>

#include "model/scenario.hpp"
#include "test_support.hpp"

namespace tpsim::test::moe {

constexpr int kTp = 2;
constexpr int kEp = 8;

inline model::ArchSpec qwen3_moe() {
  return model::load_model_preset("qwen3-30b-a3b");
}

inline model::Workload with_experts(model::Workload w, int ep, model::ExpertParallel routing = {}) {
  routing.degree = ep;
  w.expert_parallel = routing;
  return w;
}

inline model::ExpertParallel zipf(double s, uint64_t seed = 1) {
  model::ExpertParallel ep;
  ep.routing = model::Routing::kZipf;
  ep.zipf_s = s;
  ep.seed = seed;
  return ep;
}

}  // namespace tpsim::test::moe
