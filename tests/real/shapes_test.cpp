// GEMM shapes for tpsim-real from a scenario: exactly those of the simulator's layer graphs.
#include <unistd.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "base/input_error.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"
#include "real/core/gemm_shapes.hpp"

using tpsim::real::GemmCase;
using tpsim::real::scenario_gemm_shapes;

namespace {

using Shape = std::tuple<int64_t, int64_t, int64_t>;

// The shapes of `a` not in `b`.
std::set<Shape> difference(const std::set<Shape>& a, const std::set<Shape>& b) {
  std::set<Shape> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.begin()));
  return out;
}

// MxNxK of each shape, comma-separated ("none" for no shape).
std::string shapes_text(const std::set<Shape>& shapes) {
  std::string out;
  for (const auto& [m, n, k] : shapes) {
    out += (out.empty() ? "" : ", ") + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  }
  return out.empty() ? "none" : out;
}

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
  const auto scenario =
      tpsim::model::load_scenario(TPSIM_SOURCE_DIR "/scenarios/inference/llama3-70b-tp8-generate-b8.yaml");
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
      shape_set(scenario_gemm_shapes(TPSIM_SOURCE_DIR "/scenarios/inference/llama3-70b-tp8-generate-b8.yaml"));
  CHECK(generated == from_graphs);
  // A generate workload has its prefill's and its decode steps' shapes: batch 8 decodes one token each.
  CHECK(std::any_of(generated.begin(), generated.end(), [](const Shape& s) { return std::get<0>(s) == 8; }));
}

namespace {

// Llama-3.1-8B forward, one layer at TP 8: blocking TP and async TP in 2 chunks, `extra` appended.
std::string two_variant_scenario(const std::string& extra) {
  return "name: swept-shapes\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: nvswitch, nodes: 1}\n"
         "calibration: default\nworkload: {phase: forward, batch: 1, seq_len: 1024, dtype: bf16, layers: "
         "1}\nparallelism: {tp: 8}\n"
         "variants:\n  - {name: tp, tp_mode: tp}\n  - {name: async, tp_mode: async, chunks: 2, transport: sm}\n" +
         extra;
}

// The shapes of scenario text written to a file of its own (named per process: test runs may share /tmp).
std::vector<GemmCase> shapes_of_text(const std::string& text, const std::string& file_name) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + file_name);
  {
    std::ofstream out(path);
    out << text;
  }
  std::vector<GemmCase> shapes = scenario_gemm_shapes(path.string());
  std::filesystem::remove(path);
  return shapes;
}

}  // namespace

TEST_CASE("a swept scenario lists the shapes of every sweep point once each, sorted, counts summed", "[real][shapes]") {
  // Batch 1 and 2 of 1024 tokens: blocking TP runs M = 1024 and 2048, async TP's 2 chunks M = 512 and
  // 1024, so M = 1024 comes from both points; the GPU axis changes no shape.
  const int64_t hidden = 4096, tp = 8, ffn = 14336, head = 128;
  const int64_t qkv = (32 + 2 * 8) * head / tp, gate_up = 2 * ffn / tp;
  std::set<Shape> expected;
  for (int64_t m : {512, 1024, 2048}) {
    expected.insert({{m, qkv, hidden}, {m, hidden, hidden / tp}, {m, gate_up, hidden}, {m, hidden, ffn / tp}});
  }
  const std::vector<GemmCase> swept =
      shapes_of_text(two_variant_scenario("sweep:\n  workload.batch: [1, 2]\n  hardware.gpu: [h100-sxm, h200-sxm]\n"),
                     "tpsim_swept_shapes.yaml");
  CHECK(shape_set(swept) == expected);
  CHECK(swept.size() == expected.size());  // each shape once
  CHECK(std::is_sorted(swept.begin(), swept.end(), [](const GemmCase& a, const GemmCase& b) {
    return std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
  }));
  // Each shape's count is the sum over the four points, each point's as its own scenario lists it.
  std::map<Shape, int64_t> summed;
  for (const char* batch : {"1", "2"}) {
    std::string point = two_variant_scenario("");
    point.replace(point.find("batch: 1"), 8, std::string("batch: ") + batch);
    for (const GemmCase& c : shapes_of_text(point, "tpsim_swept_shapes_point.yaml"))
      summed[{c.m, c.n, c.k}] += 2 * c.per_rank_count;
  }
  for (const GemmCase& c : swept) {
    INFO(c.m << "x" << c.n << "x" << c.k << "  " << c.example);
    CHECK(c.per_rank_count == summed[{c.m, c.n, c.k}]);
    CHECK(c.example.rfind("workload.batch=", 0) == 0);  // the first point that has it, named
  }
}

TEST_CASE("a sweep point that is no valid scenario is refused, naming why, not skipped", "[real][shapes]") {
  // TP 8 divides Llama-3.1-8B's 32 query heads, TP 3 does not: the sweep would fail that point.
  CHECK_THROWS_WITH(
      shapes_of_text(two_variant_scenario("sweep:\n  parallelism.tp: [8, 3]\n"), "tpsim_invalid_sweep.yaml"),
      Catch::Contains("tp=3"));
}

TEST_CASE("an ops scenario has no layer graph to take shapes from", "[real][shapes]") {
  CHECK_THROWS_WITH(scenario_gemm_shapes(TPSIM_SOURCE_DIR "/scenarios/forward/ops-gemm-allgather-overlap.yaml"),
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
  const std::filesystem::path root = TPSIM_SOURCE_DIR "/scenarios";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::filesystem::path top = *entry.path().lexically_relative(root).begin();
    if (entry.path().extension() != ".yaml" || top == "presets" || top == "traces" || top == "plans") continue;
    if (tpsim::model::load_scenario(entry.path().string()).workload.phase == tpsim::model::Phase::kOps) continue;
    for (const Shape& s : shape_set(scenario_gemm_shapes(entry.path().string()))) expected.insert(s);
  }
  const std::set<Shape> committed =
      shape_set(tpsim::real::read_shapes_file(TPSIM_SOURCE_DIR "/real/shapes/shipped_scenarios.txt"));
  // Each difference named, with the command that regenerates the file after a scenario or graph change.
  INFO("missing from the file: " << shapes_text(difference(expected, committed))
                                 << "; in the file but in no shipped scenario: "
                                 << shapes_text(difference(committed, expected))
                                 << "; regenerate with real/scripts/prepare_device.sh");
  CHECK(committed == expected);
}
