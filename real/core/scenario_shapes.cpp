// GEMM shapes from the layer graphs the simulator builds for a scenario, at every point of its sweep
// (full builds only); grouped GEMMs left out.
#include <map>
#include <tuple>

#include "base/input_error.hpp"
#include "input/sweep.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"
#include "real/core/gemm_shapes.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::real {
namespace {

using ShapeKey = std::tuple<int64_t, int64_t, int64_t>;

void add_graph_shapes(const model::LayerGraph& graph, const std::string& label, std::map<ShapeKey, GemmCase>& shapes) {
  for (const model::Op& op : graph.ops()) {
    // Grouped GEMMs (MoE experts) are another kernel than the cuBLASLt GEMMs this sweep measures.
    if (op.kind != model::OpKind::kGemm || op.gemm.groups > 1) continue;
    GemmCase& c = shapes[{op.gemm.m, op.gemm.n, op.gemm.k}];
    if (c.per_rank_count == 0) {
      c = GemmCase{op.gemm.m, op.gemm.n, op.gemm.k, 0, label + " " + op.name};
    }
    ++c.per_rank_count;
  }
}

std::vector<model::Pass> passes_of(const model::Workload& workload) {
  std::vector<model::Pass> passes = {model::primary_pass(workload)};
  if (workload.phase == model::Phase::kGenerate && workload.gen_len > 1) {
    passes.push_back(model::decode_pass(workload, 0));
  }
  return passes;
}

// Every GEMM of one scenario (one sweep point): each variant's passes, at each chunk count a
// `chunks: auto` variant tries; examples are labelled `prefix` + the variant's name.
void add_scenario_shapes(const model::Scenario& scenario, const std::string& prefix,
                         std::map<ShapeKey, GemmCase>& shapes) {
  if (scenario.workload.phase == model::Phase::kOps) {
    throw InputError(scenario.file + ": an ops workload lists its GEMMs itself; give them with --shape");
  }
  for (const model::Variant& variant : scenario.variants) {
    std::vector<int> chunk_counts = {variant.chunks};
    if (variant.chunks_auto) chunk_counts = sim::chunk_candidates(scenario);
    for (int chunks : chunk_counts) {
      model::Variant v = variant;
      v.chunks = chunks;
      v.chunks_auto = false;
      for (const model::Pass& pass : passes_of(scenario.workload)) {
        const model::LayerGraph graph =
            model::build_pass_graph(scenario.arch, scenario.workload, pass, scenario.parallelism.tp, v);
        add_graph_shapes(graph, prefix + v.name, shapes);
      }
    }
  }
}

// "workload.batch=4 " for a sweep point; empty for a scenario without a sweep.
std::string point_prefix(const model::AxisValues& values) {
  std::string prefix;
  for (const auto& [axis, value] : values) prefix += axis + "=" + value + " ";
  return prefix;
}

}  // namespace

std::vector<GemmCase> scenario_gemm_shapes(const std::string& scenario_file) {
  std::map<ShapeKey, GemmCase> shapes;
  // Point by point, in the sweep's order (the last axis fastest), one scenario in memory at a time; an
  // invalid combination is an error, as in `tpsim run`.
  const model::SweepPlan sweep(model::load_scenario(scenario_file));
  for (size_t i = 0; i < sweep.size(); ++i) add_scenario_shapes(sweep.point(i), point_prefix(sweep.values(i)), shapes);
  std::vector<GemmCase> out;
  for (const auto& [key, c] : shapes) out.push_back(c);
  return out;
}

}  // namespace tpsim::real
