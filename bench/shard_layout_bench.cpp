// Wall time of `tpsim shard layout` at Qwen3-0.6B dimensions (28 layers, 8 KV groups, 3,072 FFN
// neurons) and at 16 KV groups, on synthetic affinities, for 2, 4 and 8 devices: the optimiser alone
// (one start), and the whole plan (layer-wise start, 4 restarts, the anti-optimised layout and 16
// random baselines). One core.
#include <benchmark/benchmark.h>

#include <random>

#include "shard/layout_report.hpp"

namespace {

tpsim::shard::AffinityTables synthetic(int groups) {
  std::mt19937_64 engine(42);
  std::exponential_distribution<double> heavy_tailed(1.0);
  tpsim::shard::AffinityTables t{28, groups, 3072, {}, {}};
  for (int i = 0; i < t.layers; ++i) {
    std::vector<double> up(static_cast<size_t>(groups) * 3072), down(up.size());
    for (double& v : up) v = heavy_tailed(engine);
    for (double& v : down) v = heavy_tailed(engine);
    t.up.push_back(up);
    if (i + 1 < t.layers) t.down.push_back(down);
  }
  return tpsim::shard::normalised(t);
}

void BM_OptimiseOneStart(benchmark::State& state) {
  const auto tables = synthetic(static_cast<int>(state.range(1)));
  const int devices = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const auto o = tpsim::shard::optimise_layout(tables, tpsim::shard::contiguous_layout(tables, devices), false);
    benchmark::DoNotOptimize(o.objective);
    state.counters["sweeps"] = static_cast<double>(o.history.size());
  }
}
BENCHMARK(BM_OptimiseOneStart)
    ->ArgsProduct({{2, 4, 8}, {8}})
    ->Args({4, 16})
    ->Args({8, 16})
    ->ArgNames({"devices", "kv_groups"})
    ->Unit(benchmark::kMillisecond);

void BM_PlanLayout(benchmark::State& state) {
  const auto tables = synthetic(static_cast<int>(state.range(1)));
  tpsim::shard::LayoutRequest request;
  request.devices = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const auto report = tpsim::shard::plan_layout(tables, request);
    benchmark::DoNotOptimize(report.json.size());
  }
}
BENCHMARK(BM_PlanLayout)
    ->ArgsProduct({{2, 4, 8}, {8}})
    ->Args({4, 16})
    ->ArgNames({"devices", "kv_groups"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
