// The moe section's reader.
#include "model/moe/expert_parallel.hpp"

#include <yaml-cpp/yaml.h>

#include "base/units.hpp"
#include "input/yaml_reader.hpp"

namespace tpsim::model {
namespace {

// Zipf exponents past 4 put nearly every token on one expert; capacity factors past 64 cap nothing.
constexpr double kMaxZipf = 4.0;
constexpr double kMaxCapacityFactor = 64.0;

}  // namespace

const std::vector<std::string>& moe_routing_keys() {
  static const std::vector<std::string> keys = {"routing",         "zipf_s", "file",       "drop",
                                                "capacity_factor", "seed",   "dispatcher", "deepep_mode"};
  return keys;
}

void read_moe_routing(const YamlReader& in, const YAML::Node& node, ExpertParallel& out) {
  in.expect_map(node, "moe", moe_routing_keys());
  if (node["routing"]) {
    const std::string routing = in.choice(node["routing"], "moe.routing", {"balanced", "zipf", "from_file"});
    out.routing = routing == "zipf" ? Routing::kZipf : routing == "from_file" ? Routing::kFromFile : Routing::kBalanced;
  }
  if (node["file"]) {
    if (out.routing != Routing::kFromFile) in.fail(node["file"], "moe.file applies to routing: from_file only");
    out.routing_file = in.string(node["file"], "moe.file");
  } else if (out.routing == Routing::kFromFile) {
    in.fail(node["routing"], "moe.routing from_file needs file: a CSV of layer,expert,tokens (docs/scenarios.md)");
  }
  if (node["zipf_s"]) {
    if (out.routing != Routing::kZipf) in.fail(node["zipf_s"], "moe.zipf_s applies to routing: zipf only");
    out.zipf_s = in.number_in(node["zipf_s"], "moe.zipf_s", 0, kMaxZipf);
  } else if (out.routing == Routing::kZipf) {
    in.fail(node["routing"], "moe.routing zipf needs zipf_s, the exponent of the experts' shares (0 to 4)");
  }
  if (node["drop"]) out.drop = in.boolean(node["drop"], "moe.drop");
  if (node["capacity_factor"]) {
    if (!out.drop) {
      in.fail(node["capacity_factor"],
              "moe.capacity_factor caps each expert only with drop: true (dropless routing computes every token)");
    }
    out.capacity_factor = in.number_in(node["capacity_factor"], "moe.capacity_factor", 1, kMaxCapacityFactor);
  } else if (out.drop) {
    in.fail(node["drop"],
            "moe.drop: true needs capacity_factor, each expert's capacity over its balanced share "
            "(1 to 64; GShard and Switch use 1 to 2)");
  }
  if (node["seed"]) out.seed = in.seed(node["seed"], "moe.seed");
  if (node["dispatcher"]) {
    out.dispatcher = in.choice(node["dispatcher"], "moe.dispatcher", {"nccl", "deepep"}) == "deepep"
                         ? Dispatcher::kDeepEp
                         : Dispatcher::kNccl;
  }
  if (node["deepep_mode"]) {
    if (out.dispatcher != Dispatcher::kDeepEp) {
      in.fail(node["deepep_mode"], "moe.deepep_mode applies to dispatcher: deepep only");
    }
    const std::string mode = in.choice(node["deepep_mode"], "moe.deepep_mode", {"auto", "normal", "low_latency"});
    out.deepep_mode = mode == "normal"        ? DeepEpMode::kNormal
                      : mode == "low_latency" ? DeepEpMode::kLowLatency
                                              : DeepEpMode::kAuto;
  }
}

std::string to_string(DeepEpMode mode) {
  switch (mode) {
    case DeepEpMode::kNormal:
      return "normal";
    case DeepEpMode::kLowLatency:
      return "low_latency";
    default:
      return "auto";
  }
}

bool runs_low_latency(const ExpertParallel& ep, bool inference, int64_t new_tokens) {
  if (ep.dispatcher != Dispatcher::kDeepEp || !inference) return false;
  return ep.deepep_mode == DeepEpMode::kLowLatency || (ep.deepep_mode == DeepEpMode::kAuto && new_tokens == 1);
}

std::string to_string(Dispatcher dispatcher) {
  return dispatcher == Dispatcher::kDeepEp ? "deepep" : "nccl";
}

std::string to_string(Routing routing) {
  switch (routing) {
    case Routing::kZipf:
      return "zipf";
    case Routing::kFromFile:
      return "from_file";
    default:
      return "balanced";
  }
}

std::string to_string(const ExpertParallel& ep) {
  std::string text = ep.routing == Routing::kZipf       ? "zipf(" + format_number("%g", ep.zipf_s) + ")"
                     : ep.routing == Routing::kFromFile ? "from_file(" + ep.routing_file + ")"
                                                        : "balanced";
  if (ep.drop) text += ", capacity " + format_number("%g", ep.capacity_factor) + " with drops";
  return text;
}

}  // namespace tpsim::model
