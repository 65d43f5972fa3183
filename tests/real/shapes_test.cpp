// GEMM shapes for tpsim-real from a scenario: exactly those of the simulator's layer graphs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "model/graph_builder.hpp"
#include "model/input_error.hpp"
#include "model/scenario.hpp"
#include "real/core/gemm_shapes.hpp"

using tpsim::real::GemmCase;
using tpsim::real::scenario_gemm_shapes;

namespace {

using Shape = std::tuple<int64_t, int64_t, int64_t>;

std::set<Shape> shape_set(const std::vector<GemmCase>& cases) {
  std::set<Shape> out;
  for (const GemmCase& c : cases) out.insert({c.m, c.n, c.k});
  return out;
}

}  // namespace

TEST_CASE("the quickstart's shapes are Llama-3.1-8B's per-rank GEMMs and async TP's chunks", "[real][shapes]") {
  // Llama-3.1-8B: hidden 4096, 32 query and 8 KV heads of 128, FFN 14336; batch 8 x 8192 tokens, TP 8.
  const int64_t tokens = 8 * 8192, hidden = 4096, tp = 8, ffn = 14336, head = 128;
  const int64_t qkv = (32 + 2 * 8) * head / tp, gate_up = 2 * ffn / tp;
  const int64_t chunk = tokens / 8;  // async-ce: 8 chunks
  const std::set<Shape> expected = {
      {tokens, qkv, hidden}, {tokens, hidden, hidden / tp}, {tokens, gate_up, hidden}, {tokens, hidden, ffn / tp},
      {chunk, qkv, hidden},  {chunk, hidden, hidden / tp},  {chunk, gate_up, hidden},  {chunk, hidden, ffn / tp},
  };
  const std::vector<GemmCase> cases = scenario_gemm_shapes(TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml");
  CHECK(shape_set(cases) == expected);
  // Sorted, and counted per rank: tp, tp-sp and ideal run each whole shape once per layer (4 layers).
  CHECK(std::is_sorted(cases.begin(), cases.end(), [](const GemmCase& a, const GemmCase& b) {
    return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
  }));
  for (const GemmCase& c : cases) {
    if (c.m == tokens) CHECK(c.per_rank_count == 3 * 4);
  }
}

TEST_CASE("scenario shapes equal the GEMM ops of the layer graphs the simulator builds", "[real][shapes]") {
  const auto scenario = tpsim::model::load_scenario(TPSIM_SOURCE_DIR "/scenarios/llama3-70b-tp8-generate-b8.yaml");
  std::set<Shape> from_graphs;
  for (const auto& variant : scenario.variants) {
    std::vector<tpsim::model::Pass> passes = {tpsim::model::primary_pass(scenario.workload),
                                              tpsim::model::decode_pass(scenario.workload, 0)};
    for (const auto& pass : passes) {
      const auto graph =
          tpsim::model::build_pass_graph(scenario.arch, scenario.workload, pass, scenario.parallelism.tp, variant);
      for (const auto& op : graph.ops()) {
        if (op.kind == tpsim::model::OpKind::kGemm) from_graphs.insert({op.gemm.m, op.gemm.n, op.gemm.k});
      }
    }
  }
  const std::set<Shape> generated =
      shape_set(scenario_gemm_shapes(TPSIM_SOURCE_DIR "/scenarios/llama3-70b-tp8-generate-b8.yaml"));
  CHECK(generated == from_graphs);
  // A generate workload has its prefill's and its decode steps' shapes: batch 8 decodes one token each.
  CHECK(std::any_of(generated.begin(), generated.end(), [](const Shape& s) { return std::get<0>(s) == 8; }));
}

TEST_CASE("an ops scenario has no layer graph to take shapes from", "[real][shapes]") {
  CHECK_THROWS_WITH(scenario_gemm_shapes(TPSIM_SOURCE_DIR "/scenarios/ops-gemm-allgather-overlap.yaml"),
                    Catch::Contains("give them with --shape"));
}

TEST_CASE("a shapes listing reads back as the same shapes, and a bad line is named by file and line",
          "[real][shapes]") {
  const std::vector<GemmCase> shapes = scenario_gemm_shapes(TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml");
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "tpsim_real_shapes.txt";
  {
    std::ofstream out(path);
    out << tpsim::real::shapes_listing(shapes);
  }
  CHECK(shape_set(tpsim::real::read_shapes_file(path.string())) == shape_set(shapes));
  {
    std::ofstream out(path);
    out << "# shapes\n128x128x128\n\n64 by 64\n";
  }
  CHECK_THROWS_WITH(tpsim::real::read_shapes_file(path.string()),
                    path.string() +
                        ":4:1: '64' is not a shape; each line starts with MxNxK (lines starting with # are "
                        "comments)");
  std::filesystem::remove(path);
}

TEST_CASE("the committed GEMM sweep lists exactly the shapes of the shipped scenarios", "[real][shapes]") {
  std::set<Shape> expected;
  for (const auto& entry : std::filesystem::directory_iterator(TPSIM_SOURCE_DIR "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    if (tpsim::model::load_scenario(entry.path().string()).workload.phase == tpsim::model::Phase::kOps) continue;
    for (const Shape& s : shape_set(scenario_gemm_shapes(entry.path().string()))) expected.insert(s);
  }
  // Regenerate with real/scripts/prepare_device.sh after a scenario or graph change.
  CHECK(shape_set(tpsim::real::read_shapes_file(TPSIM_SOURCE_DIR "/real/shapes/shipped_scenarios.txt")) == expected);
}
