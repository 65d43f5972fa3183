// Single-op predictions: the GEMM cost model directly; a collective simulated alone on an idle node,
// reported with the nccl-tests conventions (algbw = bytes / time, busbw = algbw x 2(n-1)/n or (n-1)/n).
#include "cli/predict_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "calibrate/measurement.hpp"
#include "model/input_error.hpp"
#include "model/presets.hpp"
#include "model/program_builder.hpp"
#include "model/units.hpp"
#include "sim/comm_plan.hpp"
#include "sim/isolated_run.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;

sim::CostModel cost_model(const PredictTarget& target) {
  const auto text = model::find_preset("gpus", target.gpu, "yaml");
  if (!text) {
    throw InputError("--gpu " + target.gpu +
                     ": unknown GPU preset; valid: " + model::join_names(model::preset_names("gpus")));
  }
  const model::YamlReader reader("presets/gpus/" + target.gpu + ".yaml");
  const sim::GpuSpec gpu = sim::read_gpu_spec(reader, reader.parse_text(std::string(*text)));
  if (target.calibration != "default") return sim::CostModel(gpu, sim::load_profile_file(target.calibration));
  std::optional<sim::CostProfile> profile = sim::default_profile(gpu.name);
  if (!profile) throw InputError("--gpu " + gpu.name + ": " + sim::no_default_profile_message(gpu.name));
  return sim::CostModel(gpu, *profile);
}

}  // namespace

double parse_bytes(const std::string& text) {
  try {
    return model::parse_bytes(text);
  } catch (const InputError& error) {
    throw InputError(std::string("--bytes: ") + error.what());
  }
}

int predict_gemm(const PredictTarget& target, const GemmQuery& q) {
  if (q.m <= 0 || q.n <= 0 || q.k <= 0) throw InputError("--m, --n and --k must be positive integers");
  if (q.dtype != "bf16" && q.dtype != "fp8") throw InputError("--dtype " + q.dtype + ": valid: bf16, fp8");
  const sim::CostModel cost = cost_model(target);
  const bool fp8 = q.dtype == "fp8";
  if (const std::string why = fp8 ? cost.fp8_unsupported_reason() : ""; !why.empty()) {
    throw InputError("--dtype fp8: " + why);
  }
  const model::GemmShape shape{q.m, q.n, q.k};
  const double bytes = model::gemm_bytes(shape, fp8 ? model::kFp8Bytes : model::kBf16Bytes, model::kBf16Bytes);
  const double seconds = cost.gemm_seconds(shape, bytes, fp8);
  const double flops = model::gemm_flops(shape);
  const sim::GemmTiling tiling = cost.gemm_tiling(shape);
  if (target.json) {
    Json j;
    j["gpu"] = cost.gpu().name;
    j["m"] = q.m;
    j["n"] = q.n;
    j["k"] = q.k;
    j["dtype"] = q.dtype;
    j["time_s"] = seconds;
    j["tflops"] = flops / seconds / 1e12;
    j["tiles"] = tiling.tiles;
    j["split_k"] = tiling.splits;
    j["waves"] = tiling.waves;
    j["wave_efficiency"] = tiling.wave_efficiency;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "gemm M=" << q.m << " N=" << q.n << " K=" << q.k << " " << q.dtype << " on " << cost.gpu().name << ": "
            << model::format_number("%.3f", seconds * 1e6) << " us, "
            << model::format_number("%.1f", flops / seconds / 1e12) << " TFLOP/s (" << tiling.tiles
            << " tiles, split-K " << tiling.splits << ", " << tiling.waves << " waves, "
            << model::format_number("%.0f", tiling.wave_efficiency * 100) << "% wave efficiency)\n";
  return 0;
}

int predict_collective(const PredictTarget& target, const CollectiveQuery& q) {
  const sim::CostModel on_node = cost_model(target);
  // ib-rail: as many nodes as the ranks reach (the placement check below wants them filled).
  const int per_node = on_node.gpu().gpus_per_node;
  const int nodes = q.topology == "ib-rail" ? std::max(1, (q.ranks + per_node - 1) / per_node) : 1;
  if (q.nic_GBps < 0 || (q.nic_GBps > 0 && q.topology != "ib-rail")) {
    throw InputError("--nic-GBps: a positive NIC bandwidth, for --topology ib-rail only");
  }
  if (q.oversubscription != 1 && q.topology != "ib-rail") {
    throw InputError("--oversubscription: for --topology ib-rail only (the fat tree above its rail switches)");
  }
  if (!(q.oversubscription >= 1)) {
    throw InputError("--oversubscription " + model::format_number("%g", q.oversubscription) +
                     ": must be 1 (non-blocking) or more, e.g. 2 for 2:1");
  }
  sim::Fabric fabric;
  try {
    fabric =
        sim::resolve_fabric(sim::FabricRequest{q.topology, nodes, q.nic_GBps * 1e9, q.oversubscription}, on_node.gpu());
  } catch (const InputError& error) {
    throw InputError(std::string("--topology: ") + error.what());
  }
  const sim::CostModel cost(on_node.gpu(), on_node.profile(), fabric);
  if (q.ranks < 2) throw InputError("--ranks " + std::to_string(q.ranks) + ": a group needs 2 GPUs or more");
  if (const std::string why = sim::group_placement_problem(fabric, q.ranks, cost.gpu().name); !why.empty()) {
    throw InputError("--ranks " + std::to_string(q.ranks) + ": " + why +
                     (q.topology == "ib-rail" ? "" : " (ib-rail spans nodes)"));
  }
  const std::optional<model::CollectiveKind> named = model::collective_kind_named(q.kind);
  if (!named) throw InputError("--kind " + q.kind + ": valid: allreduce, allgather, reducescatter, alltoall, sendrecv");
  const model::CollectiveKind kind = *named;
  const double bus_factor = calibrate::bus_factor(q.kind, q.ranks);  // nccl-tests' convention
  const std::optional<model::CollectiveAlgorithm> named_algorithm = model::collective_algorithm_named(q.algorithm);
  if (!named_algorithm) {
    throw InputError("--algorithm " + q.algorithm +
                     ": valid: " + model::join_names(model::collective_algorithm_names()));
  }
  const model::CollectiveAlgorithm algorithm = *named_algorithm;
  const std::optional<model::Protocol> protocol = model::protocol_named(q.protocol);
  if (!protocol) {
    throw InputError("--protocol " + q.protocol + ": valid: " + model::join_names(model::protocol_names()));
  }
  const double bytes = parse_bytes(q.bytes);
  model::LayerGraph graph(q.ranks);
  model::ProgramBuilder builder(graph, 2.0);
  builder.set_collective_algorithm(algorithm);
  builder.set_collective_protocol(*protocol);
  const model::OpId op = builder.collective(q.kind, kind, bytes, "", {});
  const sim::CommPlan plan = sim::plan_communication(graph.op(op), q.ranks, cost);  // bad profiles throw here
  const double seconds = sim::simulate(graph, cost).makespan_s;
  // Rings also name their protocol regime.
  const bool ring = plan.algorithm == model::CollectiveAlgorithm::kRing;
  const std::string algorithm_name =
      model::to_string(plan.algorithm) + (ring ? " " + model::to_string(plan.protocol) : std::string());
  const double algbw = bytes / seconds / 1e9;
  if (target.json) {
    Json j;
    j["gpu"] = cost.gpu().name;
    j["topology"] = q.topology;
    j["ranks"] = q.ranks;
    j["nodes"] = fabric.nodes;
    if (fabric.oversubscription != 1) j["oversubscription"] = fabric.oversubscription;
    j["kind"] = q.kind;
    j["bytes"] = bytes;
    j["algorithm"] = model::to_string(plan.algorithm);
    if (ring) j["protocol"] = model::to_string(plan.protocol);
    j["time_s"] = seconds;
    j["algbw_GBps"] = algbw;
    j["busbw_GBps"] = algbw * bus_factor;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << q.kind << " of " << model::format_number("%.0f", bytes) << " bytes over " << q.ranks << " x "
            << cost.gpu().name << " (" << q.topology
            << (fabric.nodes > 1 ? ", " + std::to_string(fabric.nodes) + " nodes" : std::string()) << ", "
            << algorithm_name << "): " << model::format_number("%.3f", seconds * 1e6) << " us, algbw "
            << model::format_number("%.2f", algbw) << " GB/s, busbw "
            << model::format_number("%.2f", algbw * bus_factor) << " GB/s\n";
  return 0;
}

}  // namespace tpsim::cli
