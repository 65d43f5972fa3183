// Throughput of `tpsim shard affinity` (CPU forward pass plus first-order statistics) on a model of
// Qwen3-0.6B's widths (hidden 1024, 16 query and 8 KV heads of 128, FFN 3072) with random weights,
// for 2 of its 28 layers and a 4,096-token vocabulary (the LM head is not evaluated here): tokens/s
// per layer pair; the whole model's rate is about 2/28 of it. Eigen uses the threads OpenMP gives it.
#include <benchmark/benchmark.h>

#include <random>

#include "shard/affinity_stats.hpp"

namespace {

tpsim::shard::Checkpoint random_qwen3_like(int layers) {
  std::mt19937_64 engine(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto random = [&](int64_t rows, int64_t cols) {
    tpsim::shard::Matrix m(rows, cols);
    for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(engine);
    return m;
  };
  tpsim::shard::Checkpoint c;
  c.arch = {"qwen3-0.6b-like", "qwen3", 1024, 3072, 16, 8, 128, layers, 4096, true, false, true, "synthetic", {}};
  c.embed = random(4096, 1024);
  c.lm_head = c.embed;
  c.final_norm = tpsim::shard::Vector::Ones(1024);
  for (int i = 0; i < layers; ++i) {
    tpsim::shard::LayerWeights l;
    l.q = random(2048, 1024);
    l.k = random(1024, 1024);
    l.v = random(1024, 1024);
    l.o = random(1024, 2048);
    l.gate = random(3072, 1024);
    l.up = random(3072, 1024);
    l.down = random(1024, 3072);
    l.input_norm = l.post_norm = tpsim::shard::Vector::Ones(1024);
    l.q_norm = l.k_norm = tpsim::shard::Vector::Ones(128);
    c.layers.push_back(l);
  }
  return c;
}

void BM_AffinityStatistics(benchmark::State& state) {
  const tpsim::shard::Checkpoint c = random_qwen3_like(2);
  const int sequence = static_cast<int>(state.range(0));
  std::vector<int> tokens(static_cast<size_t>(sequence));
  for (int t = 0; t < sequence; ++t) tokens[static_cast<size_t>(t)] = (t * 37) % 4096;
  for (auto _ : state) {
    const auto tables = tpsim::shard::affinity_statistics(c, tokens, {sequence, 0});
    benchmark::DoNotOptimize(tables.up[0][0]);
  }
  state.SetItemsProcessed(state.iterations() * sequence);
  state.SetLabel("2 layers at Qwen3-0.6B widths; items = tokens");
}
BENCHMARK(BM_AffinityStatistics)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
