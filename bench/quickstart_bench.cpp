// Wall time of the quickstart scenario (4 variants) at one layer and at all layers, and of graph building.
// Each simulation runs in a forked child (SimGrid allows one engine per process); that cost is included.
#include <benchmark/benchmark.h>

#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"
#include "sim/run/scenario_run.hpp"

namespace {

tpsim::model::Scenario quickstart(int64_t layers) {
  auto scenario = tpsim::model::load_scenario(std::string(TPSIM_SOURCE_DIR) + "/scenarios/quickstart.yaml");
  scenario.workload.layers = layers == 0 ? scenario.arch.layers : layers;
  return scenario;
}

void BM_QuickstartScenario(benchmark::State& state) {
  const auto scenario = quickstart(state.range(0));
  for (auto _ : state) {
    const auto run = tpsim::sim::run_scenario(scenario);
    benchmark::DoNotOptimize(run.variants.back().metrics.time_s);
  }
  state.SetLabel(std::to_string(scenario.workload.layers) + " layers, 4 variants");
}
BENCHMARK(BM_QuickstartScenario)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BuildAsyncGraph(benchmark::State& state) {
  const auto scenario = quickstart(0);
  for (auto _ : state) {
    auto graph = tpsim::model::build_layer_graph(scenario.arch, scenario.workload, 8, scenario.variants[2]);
    benchmark::DoNotOptimize(graph.size());
  }
}
BENCHMARK(BM_BuildAsyncGraph)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
