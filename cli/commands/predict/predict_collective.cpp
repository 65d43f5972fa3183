// A collective simulated alone on an idle fabric, at one size or over an nccl-tests-style size sweep,
// reported with nccl-tests' conventions (algbw = bytes / time, busbw = algbw x 2(n-1)/n, (n-1)/n or 1).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "base/measurement.hpp"
#include "base/units.hpp"
#include "cli/commands/predict/predict_command.hpp"
#include "input/presets.hpp"
#include "model/graph/program_builder.hpp"
#include "sim/cost/call_timing.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/isolated_run.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;

// The most sizes a sweep may have: 8 B to 1 PiB by doubling is 48, so more than 128 means a factor
// too close to 1 to be meant.
constexpr size_t kMaxSweepPoints = 128;

struct Prediction {
  double bytes = 0;
  double device_s = 0;  // the call on the GPU alone
  double host_s = 0;    // the host's time per call, as the call is timed (sim::call_host_seconds)
  double seconds = 0;   // as the call is timed (sim::as_called_seconds)
  sim::CommPlan plan;
};

// The fabric the query names, its ranks placed on it, checked.
sim::CostModel fabric_cost(const sim::CostModel& on_node, const CollectiveQuery& q) {
  if (q.ranks < 2) throw InputError("--ranks " + std::to_string(q.ranks) + ": a group needs 2 GPUs or more");
  if (q.ranks > model::kMaxGroupRanks) {
    throw InputError("--ranks " + std::to_string(q.ranks) + ": over tpsim's limit of " +
                     std::to_string(model::kMaxGroupRanks) + " GPUs in one group (docs/reliability.md)");
  }
  // ib-rail: as many nodes as the ranks reach (the placement check below wants them filled).
  const int per_node = on_node.gpu().gpus_per_node;
  const int nodes = q.topology == "ib-rail" ? std::max(1, (q.ranks + per_node - 1) / per_node) : 1;
  if (!(q.nic_GBps >= 0 && q.nic_GBps <= model::kMaxLinkGBps) || (q.nic_GBps > 0 && q.topology != "ib-rail")) {
    throw InputError("--nic-GBps: a positive NIC bandwidth up to " + model::format_number("%g", model::kMaxLinkGBps) +
                     " GB/s, for --topology ib-rail only");
  }
  if (q.oversubscription > model::kMaxOversubscription) {
    throw InputError("--oversubscription: at most " + model::format_number("%g", model::kMaxOversubscription));
  }
  // resolve_fabric's errors name the topology or oversubscription they refuse.
  const sim::Fabric fabric =
      sim::resolve_fabric(sim::FabricRequest{q.topology, nodes, q.nic_GBps * 1e9, q.oversubscription}, on_node.gpu());
  if (const std::string why = sim::group_placement_problem(fabric, q.ranks, on_node.gpu().name); !why.empty()) {
    throw InputError("--ranks " + std::to_string(q.ranks) + ": " + why +
                     (q.topology == "ib-rail" ? "" : " (ib-rail spans nodes)"));
  }
  return sim::CostModel(on_node.gpu(), on_node.profile(), fabric);
}

// --bytes, or the sweep -b .. -e by -f (nccl-tests' options), one of the two.
std::vector<double> query_sizes(const CollectiveQuery& q) {
  const bool sweep = !q.min_bytes.empty() || !q.max_bytes.empty();
  if (sweep == !q.bytes.empty()) {
    throw InputError(std::string(sweep ? "--bytes and a sweep (-b, -e) are both given" : "no size is given") +
                     "; give --bytes B, or a sweep -b MIN -e MAX [-f FACTOR] (as nccl-tests)");
  }
  if (!sweep) return {parse_bytes(q.bytes)};
  if (q.min_bytes.empty() || q.max_bytes.empty()) throw InputError("a sweep needs both -b MIN and -e MAX");
  const double low = parse_bytes(q.min_bytes), high = parse_bytes(q.max_bytes);
  if (low > high) throw InputError("-b " + q.min_bytes + " is above -e " + q.max_bytes);
  if (!(q.factor > 1))
    throw InputError("-f " + model::format_number("%g", q.factor) + ": the step factor must be above 1");
  std::vector<double> sizes;
  for (double b = low; b <= high * (1 + 1e-12); b *= q.factor) {
    sizes.push_back(std::round(b));
    if (sizes.size() > kMaxSweepPoints) {
      throw InputError("-f " + model::format_number("%g", q.factor) + ": more than " + std::to_string(kMaxSweepPoints) +
                       " sizes from -b to -e; take a larger factor");
    }
  }
  return sizes;
}

Prediction predict_one(const sim::CostModel& cost, const CollectiveQuery& q, model::CollectiveKind kind,
                       model::CollectiveAlgorithm algorithm, model::Protocol protocol, sim::CallTiming timing,
                       double bytes) {
  model::LayerGraph graph(q.ranks);
  model::ProgramBuilder builder(graph, model::kBf16Bytes);
  builder.set_collective_algorithm(algorithm);
  builder.set_collective_protocol(protocol);
  const model::OpId op = builder.collective(q.kind, kind, bytes, "", {});
  Prediction p;
  p.bytes = bytes;
  p.plan = sim::plan_communication(graph.op(op), q.ranks, cost);  // bad profiles throw here
  p.device_s = sim::simulate(graph, cost).makespan_s;
  p.host_s = sim::call_host_seconds(timing, cost.profile(), p.plan.nccl_call);
  p.seconds = sim::as_called_seconds(timing, p.device_s, cost.profile(), p.plan.nccl_call);
  return p;
}

// What the reported times are, for the text's first line.
std::string timing_note(sim::CallTiming timing, const sim::CostProfile& profile) {
  const auto us = [](double s) { return model::format_number("%.1f", s * 1e6) + " us"; };
  switch (timing) {
    case sim::CallTiming::kNcclTests:
      return "as nccl-tests times a call (back-to-back launches: the longer of the device's time and the host's " +
             us(sim::call_host_seconds(timing, profile, true)) + " launch path)";
    case sim::CallTiming::kTorch:
      return "as one call through torch.distributed on an idle GPU (the host's " +
             us(sim::call_host_seconds(timing, profile, true)) + " per NCCL call, " +
             us(sim::call_host_seconds(timing, profile, false)) + " per custom kernel, then the device's time)";
    case sim::CallTiming::kGraph:
      return "inside a CUDA graph (the device's time alone)";
  }
  return "";
}

// What ran, the profile section that costs it, and why it is not NCCL's own choice where it is not.
std::string run_as(const sim::CommPlan& plan) {
  std::string text = sim::ran_as(plan) + " [" + sim::costed_by(plan) + "]";
  if (!plan.deviation.empty()) text += " (" + plan.deviation + ")";
  return text;
}

Json point_json(const Prediction& p, double bus_factor) {
  Json j;
  j["bytes"] = p.bytes;
  j["algorithm"] = model::to_string(p.plan.algorithm);
  if (p.plan.nccl_run) {
    j["protocol"] = model::to_string(p.plan.nccl_run->protocol);
  } else if (p.plan.algorithm == model::CollectiveAlgorithm::kRing) {
    j["protocol"] = model::to_string(p.plan.protocol);
  }
  j["costed_by"] = sim::costed_by(p.plan);
  if (p.plan.nccl_choice) {
    j["nccl_choice"] = sim::nccl_option_name(p.plan.nccl_choice->algorithm, p.plan.nccl_choice->protocol);
    j["nccl_estimate_s"] = p.plan.nccl_choice->predicted_s;  // NCCL's own model's time, for comparison
  }
  if (!p.plan.deviation.empty()) j["deviation"] = p.plan.deviation;
  j["time_s"] = p.seconds;                      // as the call is timed (as_called)
  j["device_s"] = p.device_s;                   // the call on the GPU alone
  j["host_s"] = p.host_s;                       // the host's time per call, as the call is timed
  j["call_latency_s"] = p.plan.call_latency_s;  // NCCL's device time per call, inside device_s
  j["algbw_GBps"] = p.bytes / p.seconds / 1e9;
  j["busbw_GBps"] = p.bytes / p.seconds / 1e9 * bus_factor;
  return j;
}

}  // namespace

int predict_collective(const PredictTarget& target, const CollectiveQuery& q) {
  const sim::CostModel cost = fabric_cost(predict_cost_model(target), q);
  const std::optional<model::CollectiveKind> kind = model::collective_kind_named(q.kind);
  if (!kind) {
    throw InputError("--kind " + q.kind + ": valid: " + model::join_names(names_of(model::kCollectiveKindNames)));
  }
  const std::optional<model::CollectiveAlgorithm> algorithm = model::collective_algorithm_named(q.algorithm);
  if (!algorithm) {
    throw InputError("--algorithm " + q.algorithm +
                     ": valid: " + model::join_names(names_of(model::kCollectiveAlgorithmNames)));
  }
  const std::optional<model::Protocol> protocol = model::protocol_named(q.protocol);
  if (!protocol) {
    throw InputError("--protocol " + q.protocol + ": valid: " + model::join_names(names_of(model::kProtocolNames)));
  }
  const std::optional<sim::CallTiming> timing = value_named(sim::kCallTimingNames, q.as_called);
  if (!timing) {
    throw InputError("--as-called " + q.as_called + ": valid: " + model::join_names(names_of(sim::kCallTimingNames)));
  }
  const std::vector<double> sizes = query_sizes(q);
  const double bus_factor = calibrate::bus_factor(q.kind, q.ranks);  // nccl-tests' convention
  std::vector<Prediction> points;
  for (double bytes : sizes) points.push_back(predict_one(cost, q, *kind, *algorithm, *protocol, *timing, bytes));
  const int nodes = cost.fabric().nodes;
  if (target.json) {
    Json j;
    j["gpu"] = cost.gpu().name;
    j["topology"] = q.topology;
    j["ranks"] = q.ranks;
    j["nodes"] = nodes;
    if (cost.fabric().oversubscription != 1) j["oversubscription"] = cost.fabric().oversubscription;
    j["kind"] = q.kind;
    j["as_called"] = sim::to_string(*timing);
    if (points.size() == 1) {
      j.update(point_json(points.front(), bus_factor));
    } else {
      j["points"] = Json::array();
      for (const Prediction& p : points) j["points"].push_back(point_json(p, bus_factor));
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const std::string where = std::to_string(q.ranks) + " x " + cost.gpu().name + " (" + q.topology +
                            (nodes > 1 ? ", " + std::to_string(nodes) + " nodes" : std::string());
  if (points.size() == 1) {
    const Prediction& p = points.front();
    const double algbw = p.bytes / p.seconds / 1e9;
    std::cout << q.kind << " of " << model::format_number("%.0f", p.bytes) << " bytes over " << where << ", "
              << run_as(p.plan)
              << (p.plan.call_latency_s > 0 ? ", NCCL's device time per call " +
                                                  model::format_number("%.1f", p.plan.call_latency_s * 1e6) + " us"
                                            : std::string())
              << ") " << timing_note(*timing, cost.profile()) << ": " << model::format_number("%.3f", p.seconds * 1e6)
              << " us (device " << model::format_number("%.3f", p.device_s * 1e6) << " us), algbw "
              << model::format_number("%.2f", algbw) << " GB/s, busbw "
              << model::format_number("%.2f", algbw * bus_factor) << " GB/s\n";
    return 0;
  }
  std::cout << "# " << q.kind << " over " << where << "), predicted with profile " << cost.profile().name
            << "; NCCL's device time per call "
            << model::format_number("%.1f", cost.profile().nccl_call_latency_s * 1e6) << " us; times "
            << timing_note(*timing, cost.profile()) << "\n"
            << "#        size (B)     time (us)   algbw (GB/s)   busbw (GB/s)  algorithm\n";
  for (const Prediction& p : points) {
    const double algbw = p.bytes / p.seconds / 1e9;
    std::cout << model::format_number("%17.0f", p.bytes) << model::format_number("%14.2f", p.seconds * 1e6)
              << model::format_number("%15.2f", algbw) << model::format_number("%15.2f", algbw * bus_factor) << "  "
              << run_as(p.plan) << "\n";
  }
  return 0;
}

}  // namespace tpsim::cli
