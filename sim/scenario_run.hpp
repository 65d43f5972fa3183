// Runs every variant of a scenario: resolves hardware and profile, builds graphs, simulates, summarises.
#pragma once

#include <vector>

#include "model/layer_graph.hpp"
#include "model/scenario.hpp"
#include "sim/cost_model.hpp"
#include "sim/metrics.hpp"
#include "sim/timeline.hpp"

namespace tpsim::sim {

struct VariantRun {
  model::Variant variant;
  model::LayerGraph graph;
  Timeline timeline;
  Metrics metrics;
  double speedup = 1.0;     // baseline time / this time
  double tokens_per_s = 0;  // tokens of the step / time
};

struct ScenarioRun {
  model::Scenario scenario;
  GpuSpec gpu;
  CostProfile profile;
  std::vector<VariantRun> variants;
};

// Checks what the graph builder cannot see (topology, node count, GPUs per node); throws InputError.
void check_hardware(const model::Scenario& scenario, const GpuSpec& gpu);

ScenarioRun run_scenario(const model::Scenario& scenario);

}  // namespace tpsim::sim
