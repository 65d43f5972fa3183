// tpsim plan's speed on the shipped plans (the targets on 2 cores: the 405B plan, over 1,000 candidates, under
// 60 s; the 70B plan under 10 s), as `tpsim plan` runs them (the top 10 rows exact, the candidates a lower bound ranks
// below them not simulated), every survivor simulated, and without the program cache: the counters say how many
// candidates were simulated and bounded, how many programs were simulated and reused and the seconds the reuse saved.
#include <benchmark/benchmark.h>

#include "input/plan_file.hpp"
#include "plan/plan_search.hpp"

namespace {

// `top` 0: every survivor simulated (--exhaustive).
void run(benchmark::State& state, const char* plan_file, bool cache, size_t top = 10) {
  const tpsim::model::PlanSpec spec = tpsim::model::load_plan(std::string(TPSIM_SOURCE_DIR) + "/" + plan_file);
  tpsim::plan::PlanOptions options;
  options.jobs = 2;
  options.cache = cache;
  options.top = top;
  tpsim::plan::PlanResult result;
  for (auto _ : state) result = tpsim::plan::run_plan(spec, options);
  state.counters["candidates"] = static_cast<double>(result.candidates);
  state.counters["simulated"] = static_cast<double>(result.rows.size());
  state.counters["bounded"] = static_cast<double>(result.bounded);
  state.counters["programs"] = static_cast<double>(result.cache_misses);
  state.counters["reused"] = static_cast<double>(result.cache_hits);
  state.counters["saved_s"] = result.cache_saved_s;
}

void BM_Plan70B(benchmark::State& state) {
  run(state, "scenarios/plans/llama3-70b-64xh100.yaml", true);
}
void BM_Plan70BExhaustive(benchmark::State& state) {
  run(state, "scenarios/plans/llama3-70b-64xh100.yaml", true, 0);
}
void BM_Plan70BNoCache(benchmark::State& state) {
  run(state, "scenarios/plans/llama3-70b-64xh100.yaml", false);
}
void BM_Plan405B(benchmark::State& state) {
  run(state, "scenarios/plans/llama3-405b-16384xh100.yaml", true);
}

}  // namespace

BENCHMARK(BM_Plan70B)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Plan70BExhaustive)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Plan70BNoCache)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Plan405B)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_MAIN();
