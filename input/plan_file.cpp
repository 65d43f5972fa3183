// Plan YAML reader: keys, types and choices, each refused at its location with what is valid.
#include "input/plan_file.hpp"

#include <algorithm>
#include <filesystem>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "input/scenario_loader.hpp"
#include "input/yaml_reader.hpp"
#include "model/layers/fp8_recipe.hpp"

namespace tpsim::model {
namespace {

// A node in YAML's one-line flow form ({a: 1, b: [2, 3]}), as a candidate's scenario copies it.
std::string flow_yaml(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

// More GPUs than this in one job is a typo (the largest published runs use tens of thousands).
constexpr int kMaxPlanGpus = 1 << 20;
// More values on one axis than this is a typo, not a search.
constexpr size_t kMaxAxisValues = 64;

const std::vector<std::string> kTop = {"name",     "model",  "hardware",      "calibration",
                                       "workload", "search", "implementation"};
const std::vector<std::string> kHardware = {"gpu", "topology", "gpus"};
const std::vector<std::string> kWorkload = {"phase", "global_batch", "seq_len"};
const std::vector<std::string> kSearch = {"tp",
                                          "pp",
                                          "cp",
                                          "ep",
                                          "etp",
                                          "micro_batch",
                                          "virtual_stages",
                                          "chunks",
                                          "data_parallel",
                                          "schedule",
                                          "recompute",
                                          "tp_mode",
                                          "dtype",
                                          "dispatcher",
                                          "two_batch_overlap",
                                          "fp8_recipe"};

// A scalar or a list of them, each read by `one`; at most kMaxAxisValues, no value twice.
template <typename T, typename Read>
std::vector<T> axis(const YamlReader& in, const YAML::Node& node, const std::string& what, Read one) {
  std::vector<T> out;
  if (!node) return out;
  if (node.IsSequence()) {
    if (node.size() == 0) in.fail(node, what + " is an empty list; give at least one value or leave the key out");
    if (node.size() > kMaxAxisValues) {
      in.fail(node,
              what + " has " + std::to_string(node.size()) + " values; at most " + std::to_string(kMaxAxisValues));
    }
    for (const YAML::Node& item : node) {
      T value = one(item);
      if (std::find(out.begin(), out.end(), value) != out.end()) {
        in.fail(item, what + " names " + YamlReader::show(item) + " twice; give each value once");
      }
      out.push_back(value);
    }
    return out;
  }
  if (node.IsMap()) in.fail(node, what + " must be a value or a list of values, got a mapping");
  out.push_back(one(node));
  return out;
}

std::vector<int> counts(const YamlReader& in, const YAML::Node& node, const std::string& what) {
  return axis<int>(in, node, what, [&](const YAML::Node& n) { return in.count(n, what, kMaxPlanGpus); });
}

std::vector<std::string> choices(const YamlReader& in, const YAML::Node& node, const std::string& what,
                                 const std::vector<std::string>& valid) {
  return axis<std::string>(in, node, what, [&](const YAML::Node& n) { return in.choice(n, what, valid); });
}

void read_hardware(const YamlReader& in, const YAML::Node& node, PlanSpec& out) {
  in.expect_map(node, "hardware", kHardware);
  in.require(node, "gpu", "hardware");
  in.require(node, "gpus", "hardware");
  out.gpu_yaml = flow_yaml(node["gpu"]);
  out.topology_at = in.location(node["topology"] ? node["topology"] : node["gpu"]);
  if (node["topology"])
    out.topology = in.choice(node["topology"], "hardware.topology", {"nvswitch", "ib-rail", "nvl72"});
  out.gpus = counts(in, node["gpus"], "hardware.gpus");
}

void read_workload(const YamlReader& in, const YAML::Node& node, PlanSpec& out) {
  if (node.IsMap() && node["phase"])
    out.serving = in.choice(node["phase"], "workload.phase", {"train", "serve"}) == "serve";
  if (out.serving) {
    out.serve = read_serving_workload(in, node);
    return;
  }
  in.expect_map(node, "workload", kWorkload);
  in.require(node, "global_batch", "workload");
  in.require(node, "seq_len", "workload");
  out.global_batch =
      in.int_in(node["global_batch"], "workload.global_batch (sequences per step)", 1, kMaxPlanGpus * 64LL);
  out.seq_len = in.int_in(node["seq_len"], "workload.seq_len", 1, int64_t{1} << 24);
}

// The key node of `name` in a mapping: where an error about its (possibly empty) value points.
YAML::Node key_node(const YAML::Node& map, const std::string& name) {
  YAML::Node key;
  for (const auto& entry : map) {
    if (entry.first.Scalar() == name) key = entry.first;
  }
  return key;
}

// A serving plan's axes: the TP and expert-parallel groups, the sequences per TP group, and how the steps run.
void read_serving_search(const YamlReader& in, const YAML::Node& node, PlanSpace& s) {
  in.expect_map(node, "search (phase serve)", serving_search_keys());
  s.tp = counts(in, node["tp"], "search.tp");
  s.ep = counts(in, node["ep"], "search.ep");
  s.batch = counts(in, node["batch"], "search.batch (sequences per TP group)");
  s.dtype = choices(in, node["dtype"], "search.dtype", {"bf16", "fp8"});
  s.dispatcher = choices(in, node["dispatcher"], "search.dispatcher", {"nccl", "deepep"});
  s.two_batch_overlap = axis<bool>(in, node["two_batch_overlap"], "search.two_batch_overlap",
                                   [&](const YAML::Node& n) { return in.boolean(n, "search.two_batch_overlap"); });
  s.cuda_graphs = axis<bool>(in, node["cuda_graphs"], "search.cuda_graphs",
                             [&](const YAML::Node& n) { return in.boolean(n, "search.cuda_graphs"); });
}

void read_search(const YamlReader& in, const YAML::Node& node, PlanSpace& s) {
  if (!node) return;
  in.expect_map(node, "search", kSearch);
  s.tp = counts(in, node["tp"], "search.tp");
  s.pp = counts(in, node["pp"], "search.pp");
  s.cp = counts(in, node["cp"], "search.cp");
  s.ep = counts(in, node["ep"], "search.ep");
  s.etp = counts(in, node["etp"], "search.etp");
  s.micro_batch = counts(in, node["micro_batch"], "search.micro_batch");
  s.virtual_stages = counts(in, node["virtual_stages"], "search.virtual_stages");
  s.chunks = counts(in, node["chunks"], "search.chunks");
  s.data_parallel = choices(in, node["data_parallel"], "search.data_parallel", {"fsdp", "ddp", "hsdp", "zero1"});
  s.schedule = choices(in, node["schedule"], "search.schedule", {"1f1b", "interleaved", "zb-h1", "gpipe", "zb-v"});
  s.recompute = choices(in, node["recompute"], "search.recompute", {"none", "selective", "full"});
  s.tp_mode = choices(in, node["tp_mode"], "search.tp_mode", {"sp", "async", "tp"});
  s.dtype = choices(in, node["dtype"], "search.dtype", {"bf16", "fp8"});
  s.dispatcher = choices(in, node["dispatcher"], "search.dispatcher", {"nccl", "deepep"});
  s.two_batch_overlap = axis<bool>(in, node["two_batch_overlap"], "search.two_batch_overlap",
                                   [&](const YAML::Node& n) { return in.boolean(n, "search.two_batch_overlap"); });
  if (node["fp8_recipe"]) {
    s.fp8_recipe = in.choice(node["fp8_recipe"], "search.fp8_recipe", names_of(kFp8RecipeNames));
  }
}

// A scenario carrying the plan's own model, GPU and calibration nodes, so that their errors point into the plan.
Scenario read_probe_scenario(const YAML::Node& root, const PlanSpec& plan) {
  YAML::Node probe;
  probe["name"] = "plan";
  probe["model"] = root["model"];
  YAML::Node hardware;
  hardware["gpu"] = root["hardware"]["gpu"];
  probe["hardware"] = hardware;
  if (root["calibration"]) {
    probe["calibration"] = root["calibration"];
  } else {
    probe["calibration"] = "default";
  }
  if (root["implementation"]) probe["implementation"] = root["implementation"];
  YAML::Node workload;
  workload["phase"] = "train";
  workload["seq_len"] = plan.serving ? plan.serve.context_len : plan.seq_len;
  workload["batch"] = 1;
  probe["workload"] = workload;
  YAML::Node parallelism;
  parallelism["tp"] = 1;
  probe["parallelism"] = parallelism;
  YAML::Node variant;
  variant["name"] = "sp";
  variant["tp_mode"] = "sp";
  probe["variants"].push_back(variant);
  return parse_scenario_node(probe, plan.file);
}

}  // namespace

const std::vector<std::string>& plan_keys(const std::string& section) {
  static const std::vector<std::string> none;
  if (section.empty()) return kTop;
  if (section == "hardware") return kHardware;
  if (section == "workload") return kWorkload;
  if (section == "search") return kSearch;
  if (section == "serve.workload") return serving_workload_keys();
  if (section == "serve.search") return serving_search_keys();
  return none;
}

PlanSpec parse_plan(const std::string& text, const std::string& file) {
  const YamlReader in(file);
  PlanSpec out;
  out.file = file;
  out.text = text;
  const YAML::Node root = in.parse_text(text);
  in.expect_map(root, "the plan", kTop);
  in.require(root, "model", "the plan");
  in.require(root, "hardware", "the plan");
  in.require(root, "workload", "the plan");
  out.name = root["name"] ? in.string(root["name"], "name") : std::filesystem::path(file).stem().string();
  if (out.name.empty()) out.name = "plan";
  out.model_yaml = flow_yaml(root["model"]);
  if (root["calibration"]) {
    out.calibration_yaml = flow_yaml(root["calibration"]);
    if (root["calibration"].IsNull()) {
      in.fail(key_node(root, "calibration"),
              "calibration is empty; give default, a GPU preset's profile or a profile file, or leave "
              "the key out");
    }
  }
  read_hardware(in, root["hardware"], out);
  read_workload(in, root["workload"], out);
  if (out.serving && root["search"]) {
    read_serving_search(in, root["search"], out.space);
  } else {
    read_search(in, root["search"], out.space);
  }
  if (root["implementation"]) {
    if (!out.serving) {
      in.fail(key_node(root, "implementation"), "implementation is read by serving plans (workload.phase: serve) only");
    }
    out.implementation_yaml = flow_yaml(root["implementation"]);
    if (root["implementation"].IsNull()) {
      in.fail(
          key_node(root, "implementation"),
          "implementation is empty; give a preset (vllm, vllm-0.6, sglang, ...) or a mapping, or leave the key out");
    }
  }
  try {
    out.probe = read_probe_scenario(root, out);
  } catch (...) {
    out.probe_error = std::current_exception();
  }
  return out;
}

const Scenario& probe_scenario(const PlanSpec& plan) {
  if (plan.probe_error) std::rethrow_exception(plan.probe_error);
  if (!plan.probe) throw InputError(plan.file + ": the plan was not read by parse_plan (it has no probe scenario)");
  return *plan.probe;
}

PlanSpec load_plan(const std::string& path) {
  return parse_plan(read_input_file(path, "plan", kMaxYamlFileBytes), path);
}

}  // namespace tpsim::model
