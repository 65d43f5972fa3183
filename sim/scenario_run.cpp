// Scenario orchestration: one isolated simulation per variant, speedups against the first variant.
#include "sim/scenario_run.hpp"

#include "model/graph_builder.hpp"
#include "model/input_error.hpp"
#include "model/yaml_reader.hpp"
#include "sim/isolated_run.hpp"

namespace tpsim::sim {

void check_hardware(const model::Scenario& s, const GpuSpec& gpu) {
  const model::YamlReader in(s.file);
  if (s.topology.value != "nvswitch") {
    in.fail(s.topology.node, "hardware.topology '" + s.topology.value +
                                 "' is not supported yet; supported: nvswitch (nvl72, pcie, ib-rail are planned)");
  }
  if (s.nodes != 1) in.fail(s.topology.node, "hardware.nodes > 1 needs a multi-node topology; nvswitch is one node");
  if (s.parallelism.tp > gpu.gpus_per_node) {
    in.fail(s.topology.node, "parallelism.tp=" + std::to_string(s.parallelism.tp) + " needs more GPUs than the " +
                                 std::to_string(gpu.gpus_per_node) + " of one " + gpu.name + " NVSwitch node");
  }
}

ScenarioRun run_scenario(const model::Scenario& scenario) {
  ScenarioRun run;
  run.scenario = scenario;
  run.gpu = resolve_gpu(scenario.file, scenario.gpu.value, scenario.gpu.node);
  check_hardware(scenario, run.gpu);
  run.profile = resolve_profile(scenario, run.gpu.name);
  const CostModel cost(run.gpu, run.profile);
  for (const model::Variant& variant : scenario.variants) {
    model::LayerGraph graph =
        model::build_layer_graph(scenario.arch, scenario.workload, scenario.parallelism.tp, variant);
    Timeline timeline = simulate(graph, cost);
    Metrics metrics = compute_metrics(graph, timeline);
    run.variants.push_back(VariantRun{variant, std::move(graph), std::move(timeline), metrics});
  }
  const double baseline = run.variants.front().metrics.time_s;
  const double tokens = static_cast<double>(scenario.workload.tokens());
  for (VariantRun& v : run.variants) {
    v.speedup = baseline / v.metrics.time_s;
    v.tokens_per_s = tokens / v.metrics.time_s;
  }
  return run;
}

}  // namespace tpsim::sim
