// Scenario YAML reader: key sets, types, enums and cross-field rules, all with locations.
#include <algorithm>
#include <filesystem>
#include <set>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "input/context_parallel_reader.hpp"
#include "input/gpu_reader.hpp"
#include "input/model/hf_config.hpp"
#include "input/model/inline_model.hpp"
#include "input/op_list.hpp"
#include "input/presets.hpp"
#include "input/scenario_loader.hpp"
#include "input/section_readers.hpp"
#include "input/variant_reader.hpp"
#include "input/workload_reader.hpp"
#include "input/yaml_reader.hpp"
#include "model/parallel/async_tp.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {
namespace {

// trace: read by validate --trace (cli/trace_validate_command.cpp), not by the simulation.
const std::vector<std::string> kTopKeys = {
    "name",     "model",    "hardware", "calibration",          "workload", "parallelism",
    "pipeline", "variants", "sweep",    "implementation",       "skew",     "fsdp",
    "ddp",      "moe",      "trace",    "distributed_optimizer"};
const std::vector<std::string> kImplementationKeys = {
    "preset",         "attention",        "qkv",          "gate_up",           "rope",
    "repeat_kv",      "sp_layout_copies", "async_tp",     "model_ends",        "backward_order",
    "fp8_all_gather", "add_norm",         "step_host_us", "overlap_scheduler", "rms_norm",
    "loss",           "autocast",         "swiglu",       "saved_gemm_inputs", "userbuffer_sms",
    "compiled",       "fp8_kernels"};
const std::vector<std::string> kHardwareKeys = {"gpu",      "topology",         "nodes",
                                                "nic_GBps", "oversubscription", "power_limit_W"};
const std::vector<std::string> kParallelKeys = {"tp", "pp", "dp", "cp", "cp_comm_type", "ep", "etp", "order"};

void read_model(const YamlReader& in, const YAML::Node& node, Scenario& out) {
  if (node.IsScalar()) {
    out.model_ref = node.Scalar();
    try {
      out.arch = load_model_preset(out.model_ref);
    } catch (const InputError& error) {
      in.fail(node, error.what());
    }
    return;
  }
  if (node.IsMap() && node["hf_config"]) {
    in.expect_map(node, "model", {"hf_config"});
    const std::string path = resolve_relative(in.file(), in.string(node["hf_config"], "model.hf_config"));
    std::string text;
    try {
      text = read_input_file(path, "config.json", kMaxTextFileBytes);
    } catch (const InputError& error) {
      in.fail(node["hf_config"], "model.hf_config: " + error.detail());
    }
    out.model_ref = path;
    out.arch = parse_hf_config(text, path, path);
    return;
  }
  out.model_ref = "inline";
  out.arch = read_inline_model(in, node);
}

// implementation.userbuffer_sms: the SMs of Transformer Engine's bulk userbuffers kernels, each key over `sms`.
UserbufferSms read_userbuffer_sms(const YamlReader& in, const YAML::Node& node, UserbufferSms sms) {
  in.expect_map(node, "implementation.userbuffer_sms", {"qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad"});
  constexpr int kMaxSms = 1024;
  const auto read = [&](const char* key, int& value) {
    if (node[key]) value = in.count(node[key], std::string("implementation.userbuffer_sms.") + key, kMaxSms);
  };
  read("qkv_dgrad", sms.qkv_dgrad);
  read("qkv_wgrad", sms.qkv_wgrad);
  read("fc1_dgrad", sms.fc1_dgrad);
  read("fc1_wgrad", sms.fc1_wgrad);
  return sms;
}

// workload.fp8_recipe against the quantisation kernels implementation.fp8_kernels names (fp8_recipe.hpp).
void refuse_unrun_fp8_recipe(const YamlReader& in, const YAML::Node& root, const Workload& w) {
  const Fp8Kernels kernels = w.implementation.fp8_kernels;
  if (w.dtype != Dtype::kFp8 || w.phase != Phase::kTrain || runs_recipe(kernels, w.fp8_recipe)) return;
  const bool transformer_engine = kernels == Fp8Kernels::kTransformerEngine;
  in.fail(root["workload"]["fp8_recipe"],
          "workload.fp8_recipe " + to_string(w.fp8_recipe) + " is not run by implementation.fp8_kernels " +
              to_string(kernels) +
              (transformer_engine ? "; Transformer Engine runs tensorwise (its current scaling) and delayed"
                                  : "; delayed scaling is Transformer Engine's: set implementation.fp8_kernels: "
                                    "transformer_engine (the megatron-te preset's) or another recipe"));
}

// implementation: a preset name, or a mapping of keys over a preset (`preset:`) or over the idealised layer.
Implementation read_implementation(const YamlReader& in, const YAML::Node& node) {
  const auto preset = [&](const YAML::Node& name) {
    return implementation_preset(in.choice(name, "implementation preset", implementation_presets()));
  };
  if (node.IsScalar()) return preset(node);
  in.expect_map(node, "implementation", kImplementationKeys);
  Implementation i = node["preset"] ? preset(node["preset"]) : Implementation{};
  const auto fused_or_separate = [&](const char* key) {
    return in.choice(node[key], std::string("implementation.") + key, {"fused", "separate"}) == "separate";
  };
  bool own_keys = false;
  for (const auto& entry : node) own_keys = own_keys || entry.first.Scalar() != "preset";
  if (const YAML::Node a = node["attention"]) {
    i.attention = in.choice_of(a, "implementation.attention", kAttentionKernelNames);
  }
  if (node["qkv"]) i.separate_qkv = fused_or_separate("qkv");
  if (node["gate_up"]) i.separate_gate_up = fused_or_separate("gate_up");
  if (const YAML::Node r = node["rope"]) {
    i.rope = in.choice_of(r, "implementation.rope", kRopeKernelNames);
  }
  if (node["repeat_kv"]) i.repeat_kv = in.boolean(node["repeat_kv"], "implementation.repeat_kv");
  if (node["sp_layout_copies"]) {
    i.sp_layout_copies = in.boolean(node["sp_layout_copies"], "implementation.sp_layout_copies");
  }
  if (const YAML::Node a = node["async_tp"]) {
    i.async_tp = in.choice_of(a, "implementation.async_tp", kAsyncTpKernelNames);
  }
  if (const YAML::Node u = node["userbuffer_sms"]) i.userbuffer_sms = read_userbuffer_sms(in, u, i.userbuffer_sms);
  if (const YAML::Node e = node["model_ends"]) {
    i.model_ends = in.choice_of(e, "implementation.model_ends", kModelEndsNames);
  }
  if (const YAML::Node o = node["backward_order"]) {
    i.backward_order = in.choice_of(o, "implementation.backward_order", kBackwardOrderNames);
  }
  if (const YAML::Node f = node["add_norm"])
    i.add_norm = in.choice_of(f, "implementation.add_norm", kAddNormKernelNames);
  if (const YAML::Node n = node["rms_norm"]) i.norm = in.choice_of(n, "implementation.rms_norm", kNormKernelNames);
  if (const YAML::Node l = node["loss"]) i.loss = in.choice_of(l, "implementation.loss", kLossKernelNames);
  if (const YAML::Node a = node["swiglu"]) i.swiglu = in.choice_of(a, "implementation.swiglu", kSwigluKernelNames);
  if (const YAML::Node g = node["saved_gemm_inputs"]) {
    i.saved_gemm_inputs = in.choice_of(g, "implementation.saved_gemm_inputs", kSavedGemmInputsNames);
  }
  if (node["autocast"]) i.autocast = in.boolean(node["autocast"], "implementation.autocast");
  if (node["compiled"]) i.compiled = in.boolean(node["compiled"], "implementation.compiled");
  if (node["fp8_all_gather"]) i.fp8_all_gather = in.boolean(node["fp8_all_gather"], "implementation.fp8_all_gather");
  if (const YAML::Node k = node["fp8_kernels"]) {
    i.fp8_kernels = in.choice_of(k, "implementation.fp8_kernels", kFp8KernelsNames);
  }
  if (node["step_host_us"]) {
    i.step_host_s = in.number_in(node["step_host_us"], "implementation.step_host_us", 0, 1e6) * 1e-6;
  }
  if (node["overlap_scheduler"]) {
    i.overlap_scheduler = in.boolean(node["overlap_scheduler"], "implementation.overlap_scheduler");
  }
  if (own_keys) i.name = i.is_set() ? i.name + "+custom" : "custom";
  return i;
}

void read_parallelism(const YamlReader& in, const YAML::Node& node, Scenario& out) {
  in.expect_map(node, "parallelism", kParallelKeys);
  in.require(node, "tp", "parallelism");
  out.parallelism.tp = in.count(node["tp"], "parallelism.tp", kMaxGroupRanks);
  if (node["pp"]) out.parallelism.pp = in.count(node["pp"], "parallelism.pp", kMaxPipelineStages);
  if (node["dp"]) out.parallelism.dp = in.count(node["dp"], "parallelism.dp", kMaxDataParallel);
  if (node["ep"]) out.parallelism.ep = in.count(node["ep"], "parallelism.ep", kMaxGroupRanks);
  if (node["etp"]) out.parallelism.etp = in.count(node["etp"], "parallelism.etp", kMaxGroupRanks);
  if (node["cp"]) out.parallelism.cp = in.count(node["cp"], "parallelism.cp", kMaxGroupRanks);
  if (node["cp_comm_type"]) out.parallelism.cp_comm = read_cp_comm_type(in, node["cp_comm_type"], out.parallelism.cp);
  if (const YAML::Node order = node["order"]) {
    out.parallelism.order = read_mesh_order(in, order);
    if (out.parallelism.pp == 1 || out.parallelism.dp == 1) {
      in.fail(order,
              "parallelism.order places the pipeline stages and the data-parallel replicas; it needs pp > 1 "
              "and dp > 1 (pp is " +
                  std::to_string(out.parallelism.pp) + ", dp " + std::to_string(out.parallelism.dp) + ")");
    }
  }
  if (out.arch.hidden == 0) return;  // an op list: no model to split
  try {
    shard_for_tp(out.arch, out.parallelism.tp);
  } catch (const InputError& error) {
    in.fail(node["tp"], error.what());
  }
}

// calibration: default, a GPU preset's profile, a profile file, or {profile: ..., transfer: as_is}. Without
// the key, errors about the default profile point at the GPU that needs one.
void read_calibration(const YamlReader& in, const YAML::Node& root, Scenario& out) {
  const YAML::Node node = root["calibration"];
  if (!node) {
    out.calibration = LocatedRef{"default", out.gpu.at};
    return;
  }
  if (!node.IsMap()) {
    out.calibration = LocatedRef{in.string(node, "calibration"), in.location(node)};
    return;
  }
  in.expect_map(node, "calibration", {"profile", "transfer"});
  in.require(node, "profile", "calibration");
  out.calibration = LocatedRef{in.string(node["profile"], "calibration.profile"), in.location(node["profile"])};
  if (node["transfer"]) {
    // as_is: a profile fitted on another GPU runs unchanged (tpsim calibrate --gpu carries one over instead).
    out.calibration_as_is = in.choice(node["transfer"], "calibration.transfer", {"as_is"}) == "as_is";
  }
}

void read_hardware(const YamlReader& in, const YAML::Node& node, Scenario& out) {
  in.expect_map(node, "hardware", kHardwareKeys);
  in.require(node, "gpu", "hardware");
  const YAML::Node gpu = node["gpu"];
  out.gpu.value = gpu.IsScalar() ? gpu.Scalar() : "inline";
  out.gpu.at = in.location(gpu);
  if (gpu.IsMap()) out.gpu.inline_gpu = sim::read_inline_gpu(in, gpu);
  out.topology = node["topology"]
                     ? LocatedRef{in.string(node["topology"], "hardware.topology"), in.location(node["topology"])}
                     : LocatedRef{"nvswitch", in.location(node)};
  out.nodes = node["nodes"] ? in.count(node["nodes"], "hardware.nodes", kMaxNodes) : 1;
  if (node["nic_GBps"]) {
    if (out.topology.value != "ib-rail" && !(out.topology.value == "nvl72" && out.nodes > 1)) {
      in.fail(node["nic_GBps"], "hardware.nic_GBps needs topology: ib-rail, or nvl72 with nodes (racks) > 1");
    }
    out.nic_GBps = in.positive_number(node["nic_GBps"], "hardware.nic_GBps", kMaxLinkGBps);
  }
  if (const YAML::Node p = node["power_limit_W"]) {
    out.power_limit_W = in.number_in(p, "hardware.power_limit_W", 1, kMaxPowerW);  // the GPU's board power bounds it
  }
  if (const YAML::Node o = node["oversubscription"]) {
    if (out.topology.value != "ib-rail") in.fail(o, "hardware.oversubscription needs topology: ib-rail");
    out.oversubscription = in.positive_number(o, "hardware.oversubscription", kMaxOversubscription);
    if (out.oversubscription < 1) {
      in.fail(o, "hardware.oversubscription must be 1 (non-blocking) or more, e.g. 2 for a 2:1 fat tree");
    }
  }
}

// DTP's partial sums stay in flight for delta modules, across what would be a stage boundary: refused under a
// pipeline until modelled.
void refuse_unpipelined_variants(const YamlReader& in, const YAML::Node& variants, const Scenario& out) {
  for (size_t i = 0; i < out.variants.size(); ++i) {
    if (out.variants[i].mode != TpMode::kDtp) continue;
    in.fail(variants[i]["tp_mode"], "variant " + out.variants[i].name +
                                        ": tp_mode dtp under parallelism.pp > 1 is not modelled yet (its delayed "
                                        "partial sums would cross the stage boundaries); use tp, sp or async");
  }
}

// A parallel attention + MLP layer reduces its two branches' sum once: DTP's per-module delayed reductions are not
// modelled over it.
void refuse_delayed_parallel_residual(const YamlReader& in, const YAML::Node& variants, const Scenario& out) {
  for (size_t i = 0; i < out.variants.size(); ++i) {
    const Variant& v = out.variants[i];
    if (v.mode != TpMode::kDtp || v.delta == 0) continue;
    in.fail(variants[i]["tp_mode"], "variant " + v.name + ": tp_mode dtp with delta > 0 is not modelled for model " +
                                        out.arch.name +
                                        ", whose layers run attention and MLP in parallel (one reduction per layer, "
                                        "not per module); use tp, sp, async, nocomm or dtp with delta: 0");
  }
}

// The location of map[key], where the map has it.
std::optional<SourceLocation> key_location(const YamlReader& in, const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap() || !map[key]) return std::nullopt;
  return in.location(map[key]);
}

// Where workload.ops's entries and their collective keys were written.
std::vector<OpEntryKeys> read_op_keys(const YamlReader& in, const YAML::Node& workload) {
  std::vector<OpEntryKeys> out;
  if (!workload || !workload.IsMap() || !workload["ops"] || !workload["ops"].IsSequence()) return out;
  for (const YAML::Node& entry : workload["ops"]) {
    OpEntryKeys keys;
    keys.mapping = entry.IsMap() && entry["name"];
    if (keys.mapping) keys.name = entry["name"].Scalar();
    keys.entry = in.location(entry);
    keys.algorithm = key_location(in, entry, "algorithm");
    keys.protocol = key_location(in, entry, "protocol");
    out.push_back(std::move(keys));
  }
  return out;
}

// Where the keys that sim/ checks when it runs the scenario were written (model/scenario.hpp).
ScenarioKeys read_key_locations(const YamlReader& in, const YAML::Node& root, const Scenario& out) {
  const SourceLocation unwritten{in.file()};  // a key the file leaves out: the file, without a line
  ScenarioKeys keys;
  keys.document = in.location(root);
  keys.calibration = key_location(in, root, "calibration");
  keys.power_limit = key_location(in, root["hardware"], "power_limit_W").value_or(unwritten);
  const YAML::Node block = root["implementation"];
  keys.attention_kernel = block ? key_location(in, block, "attention").value_or(in.location(block)) : unwritten;
  keys.dispatcher = key_location(in, root["moe"], "dispatcher").value_or(out.calibration.at);
  const YAML::Node workload = root["workload"];
  keys.dtype = key_location(in, workload, "dtype").value_or(unwritten);
  keys.attention_dtype = key_location(in, workload, "attention_dtype").value_or(unwritten);
  keys.fp8_recipe = key_location(in, workload, "fp8_recipe").value_or(unwritten);
  keys.ops = read_op_keys(in, workload);
  if (const YAML::Node variants = root["variants"]; variants && variants.IsSequence()) {
    for (const YAML::Node& variant : variants) {
      keys.variants.push_back(
          {in.location(variant), key_location(in, variant, "collective"), key_location(in, variant, "protocol")});
    }
  }
  return keys;
}

}  // namespace

std::vector<std::string> section_keys(const std::string& section) {
  if (section == "workload") return workload_keys();
  if (section == "hardware") return kHardwareKeys;
  if (section == "parallelism") return kParallelKeys;
  if (section == "variant") return variant_keys();
  if (section == "skew") return rank_skew_keys();
  if (section == "implementation") return kImplementationKeys;
  if (section == "pipeline") return pipeline_keys();
  if (section == "fsdp") return fsdp_keys();
  if (section == "ddp") return ddp_keys();
  if (section == "distributed_optimizer") return distributed_optimizer_keys();
  if (section == "moe") return moe_routing_keys();
  return {};
}

Scenario parse_scenario(const std::string& text, const std::string& file) {
  Scenario scenario = parse_scenario_node(YamlReader(file).parse_text(text), file);
  scenario.source_text = text;
  return scenario;
}

Scenario parse_scenario_node(const YAML::Node& root, const std::string& file) {
  const YamlReader in(file);
  in.expect_map(root, "the scenario", kTopKeys);
  // An op list needs no model and may leave out the variants (one plain variant runs it).
  const bool ops = root["workload"] && root["workload"].IsMap() && root["workload"]["phase"] &&
                   root["workload"]["phase"].IsScalar() && root["workload"]["phase"].Scalar() == "ops";
  for (const char* key : {"hardware", "workload", "parallelism"}) in.require(root, key, "the scenario");
  if (!ops) {
    in.require(root, "model", "the scenario");
    in.require(root, "variants", "the scenario");
  }
  Scenario out;
  out.file = file;
  out.name = root["name"] ? in.string(root["name"], "name") : std::filesystem::path(file).stem().string();
  if (root["model"]) read_model(in, root["model"], out);
  read_hardware(in, root["hardware"], out);
  read_calibration(in, root, out);
  read_parallelism(in, root["parallelism"], out);
  read_workload(in, root["workload"], out);
  apply_context_parallel(in, root["parallelism"], out);
  out.pipeline = read_pipeline(in, root["pipeline"], root["parallelism"]["pp"], out.parallelism.pp, out.workload);
  out.workload.data_parallel = read_data_parallel(in, root["fsdp"], root["ddp"], root["distributed_optimizer"],
                                                  root["parallelism"]["dp"], out.parallelism.replicas(), out.workload);
  out.workload.data_parallel.member_stride = out.parallelism.dp_stride();
  if (out.workload.data_parallel.fp8_all_gather &&
      (out.arch.moe.enabled() || out.arch.latent.enabled() || out.arch.linear.enabled())) {
    in.fail(root["fsdp"]["fp8_all_gather"],
            "fsdp.fp8_all_gather is modelled for dense models with standard attention (each layer's q, k, v, o and "
            "FFN weights gathered in fp8); an MoE, multi-head latent attention or linear-attention model gathers bf16");
  }
  if (DataParallel& dp = out.workload.data_parallel; dp.fsdp && out.parallelism.pp > 1) {
    // TorchTitan keeps FSDP's parameters gathered under a pipeline: gathered once per step, not per micro-batch.
    if (const YAML::Node key = root["fsdp"]["reshard_after_forward"]; key && dp.reshard_after_forward) {
      in.fail(key,
              "fsdp.reshard_after_forward true under parallelism.pp > 1 is not modelled (every micro-batch would "
              "gather its parameters again); valid: false, the default under a pipeline, as TorchTitan runs it");
    }
    dp.reshard_after_forward = false;
  }
  if (root["implementation"]) {
    if (out.workload.phase == Phase::kOps) {
      in.fail(root["implementation"], "implementation applies to a model's layers, not to phase ops");
    }
    out.workload.implementation = read_implementation(in, root["implementation"]);
    if (out.workload.phase == Phase::kTrain && out.workload.implementation.model_ends == ModelEndsMode::kReplicated) {
      const YAML::Node& impl = root["implementation"];
      in.fail(impl.IsMap() && impl["model_ends"] ? impl["model_ends"] : impl,
              "implementation.model_ends replicated (an inference framework's whole embedding and LM head on every "
              "rank) is not modelled in phase train; use model_ends: variant or nccl");
    }
  }
  refuse_unrun_fp8_recipe(in, root, out.workload);
  if (root["variants"]) {
    read_variants(in, root["variants"], out);
  } else {
    Variant plain;
    plain.name = "ops";
    plain.mode = TpMode::kTp;
    out.variants.push_back(plain);
  }
  if (out.parallelism.pp > 1) refuse_unpipelined_variants(in, root["variants"], out);
  if (out.arch.style.parallel_residual && root["variants"]) {
    refuse_delayed_parallel_residual(in, root["variants"], out);
  }
  read_expert_parallel(in, root, out);
  if (root["skew"]) out.skew = read_rank_skew(in, root["skew"]);
  if (root["sweep"]) {
    if (!root["sweep"].IsMap()) in.fail(root["sweep"], "sweep must be a mapping of dotted paths to lists of values");
    out.has_sweep = true;
  }
  out.keys = read_key_locations(in, root, out);
  return out;
}

Scenario load_scenario(const std::string& path) {
  return parse_scenario(read_input_file(path, "scenario", kMaxYamlFileBytes), path);
}

}  // namespace tpsim::model
