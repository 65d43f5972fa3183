// The workload section's reader: phase keys, the training keys and their cross-field rules, the size check.
#include "input/workload_reader.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "base/names.hpp"
#include "base/size_checks.hpp"
#include "input/op_list.hpp"

namespace tpsim::model {
namespace {

const std::vector<std::string> kWorkloadKeys = {
    "phase",           "batch",     "seq_len",    "context_len", "gen_len",      "dtype",
    "attention_dtype", "recompute", "layers",     "cuda_graphs", "ops",          "microbatches",
    "optimizer",       "save",      "fp8_recipe", "whole_model", "global_batch", "recompute_layers"};

// Which of seq_len, context_len and gen_len each phase needs (the others are errors).
struct PhaseKeys {
  bool seq_len, context_len, gen_len;
};

PhaseKeys keys_of(Phase phase) {
  switch (phase) {
    case Phase::kForward:
    case Phase::kPrefill:
    case Phase::kTrain:
      return {true, false, false};
    case Phase::kDecode:
      return {false, true, false};
    case Phase::kGenerate:
      return {false, true, true};
    case Phase::kOps:
      return {false, false, false};
  }
  return {true, false, false};
}

// workload.save: the items of selective recomputation's save list, each at most once.
SaveList read_save_list(const YamlReader& in, const YAML::Node& node) {
  if (!node.IsSequence()) {
    in.fail(node,
            "workload.save must be a list of what selective recomputation keeps (e.g. [every_other_matmul, "
            "attention, reduce_scatter]), got " +
                YamlReader::show(node));
  }
  std::vector<std::string> valid;
  for (const auto& [name, flag] : save_list_items()) valid.push_back(name);
  SaveList save;
  for (const auto& [name, flag] : save_list_items()) save.*flag = false;
  for (const YAML::Node& item : node) {
    const std::string name = in.choice(item, "workload.save item", valid);
    bool SaveList::*flag = save_list_items()[std::find(valid.begin(), valid.end(), name) - valid.begin()].second;
    if (save.*flag) in.fail(item, "workload.save names " + name + " twice; name each item once");
    save.*flag = true;
  }
  if (save.matmul && save.every_other_matmul) {
    in.fail(node, "workload.save names both matmul (every matmul) and every_other_matmul; keep one");
  }
  return save;
}

// workload.global_batch: sequences per step over the `dp` replicas, each replica's micro-batches derived from it
// (global_batch / (dp x batch)); refused where it does not divide, or where an explicit microbatches says otherwise.
void read_global_batch(const YamlReader& in, const YAML::Node& node, int dp, Workload& w) {
  const YAML::Node key = node["global_batch"];
  w.global_batch = in.positive_int(key, "workload.global_batch (sequences per step)");
  const int64_t round = static_cast<int64_t>(dp) * w.batch;  // sequences of one micro-batch on every replica
  const std::string split = "dp=" + std::to_string(dp) + " replicas x batch " + std::to_string(w.batch) +
                            " sequences per micro-batch (" + std::to_string(round) + " per round of micro-batches)";
  if (w.global_batch % round != 0) {
    in.fail(key, "workload.global_batch " + std::to_string(w.global_batch) + " does not divide into " + split +
                     "; valid: a multiple of " + std::to_string(round));
  }
  const int64_t derived = w.global_batch / round;
  if (node["microbatches"] && w.microbatches != derived) {
    in.fail(node["microbatches"], "workload.microbatches " + std::to_string(w.microbatches) +
                                      " (per replica) contradicts global_batch " + std::to_string(w.global_batch) +
                                      " over " + split + ", which gives " + std::to_string(derived) +
                                      "; drop microbatches or set it to " + std::to_string(derived));
  }
  if (derived > kMaxMicrobatches) {
    in.fail(key, "workload.global_batch " + std::to_string(w.global_batch) + " over " + split + " gives " +
                     std::to_string(derived) + " micro-batches per replica, past the limit of " +
                     std::to_string(kMaxMicrobatches) + " simulated micro-batches; use a larger batch");
  }
  w.microbatches = derived;
}

// microbatches, recompute, save and optimizer: phase train's, refused on other phases; whole_model:
// phase forward's and the inference phases'.
void read_train_keys(const YamlReader& in, const YAML::Node& node, int dp, Workload& w) {
  if (const YAML::Node whole = node["whole_model"]) {
    if (w.phase == Phase::kTrain || w.phase == Phase::kOps) {
      in.fail(whole,
              "workload.whole_model applies to phases forward, prefill, decode and generate (phase train always runs "
              "the whole model)");
    }
    w.whole_model = in.boolean(whole, "workload.whole_model");
  }
  for (const char* key :
       {"microbatches", "recompute", "recompute_layers", "optimizer", "save", "fp8_recipe", "global_batch"}) {
    if (node[key] && w.phase != Phase::kTrain) {
      in.fail(node[key], std::string("workload.") + key + " applies only to phase train");
    }
  }
  if (w.phase != Phase::kTrain) return;
  if (node["fp8_recipe"] && w.dtype != Dtype::kFp8) {
    in.fail(node["fp8_recipe"], "workload.fp8_recipe applies only to dtype fp8; set dtype: fp8 or drop fp8_recipe");
  }
  if (w.dtype == Dtype::kFp8) {
    if (!node["fp8_recipe"]) {
      in.fail(node["dtype"],
              "workload.dtype fp8 in phase train needs workload.fp8_recipe: " + join_names(names_of(kFp8RecipeNames)) +
                  " (the quantisation kernels around every linear)");
    }
    w.fp8_recipe = in.choice_of(node["fp8_recipe"], "workload.fp8_recipe", kFp8RecipeNames);
  }
  if (node["microbatches"]) {
    w.microbatches = in.positive_int(node["microbatches"], "workload.microbatches");
    if (w.microbatches > kMaxMicrobatches) {
      in.fail(node["microbatches"], "workload.microbatches is " + std::to_string(w.microbatches) +
                                        ", past the limit of " + std::to_string(kMaxMicrobatches) +
                                        " simulated micro-batches; steps of more take proportionally longer, so "
                                        "simulate fewer and scale the time");
    }
  }
  if (node["global_batch"]) read_global_batch(in, node, dp, w);
  if (node["recompute"]) {
    w.recompute = in.choice_of(node["recompute"], "workload.recompute", kRecomputeNames);
  }
  if (node["save"]) {
    if (w.recompute != Recompute::kSelective) {
      in.fail(node["save"],
              "workload.save is selective recomputation's save list; set recompute: selective or "
              "drop save");
    }
    w.save = read_save_list(in, node["save"]);
  }
  if (const YAML::Node layers = node["recompute_layers"]) {
    if (w.recompute != Recompute::kFull) {
      in.fail(layers,
              "workload.recompute_layers is full recomputation's count of layers per program; set recompute: full or "
              "drop recompute_layers");
    }
    w.recompute_layers = in.positive_int(layers, "workload.recompute_layers");
  }
  if (node["optimizer"]) {
    w.optimizer = in.choice(node["optimizer"], "workload.optimizer", {"adamw", "none"}) == "adamw";
  }
}

// Tokens of the longest sequence a phase holds (forward, prefill: seq_len; decode: its context and the new
// token; generate: prompt and generated tokens), or nullopt past int64.
std::optional<int64_t> sequence_tokens(const Workload& w) {
  int64_t tokens = 0;
  switch (w.phase) {
    case Phase::kForward:
    case Phase::kPrefill:
    case Phase::kTrain:
      return w.seq_len;
    case Phase::kDecode:
      return __builtin_add_overflow(w.context_len, 1, &tokens) ? std::nullopt : std::optional(tokens);
    case Phase::kGenerate:
      return __builtin_add_overflow(w.context_len, w.gen_len, &tokens) ? std::nullopt : std::optional(tokens);
    case Phase::kOps:
      return 1;
  }
  return w.seq_len;
}

// Every size the layer graph multiplies out (tokens x the widest row of any tensor, the DTP all-gather's tp
// partials included) must stay within kMaxSimulatedBytes, so no later product can wrap.
void check_workload_sizes(const YamlReader& in, const YAML::Node& node, const Scenario& out) {
  const Workload& w = out.workload;
  const ArchSpec& a = out.arch;
  const int64_t width =
      std::max({a.hidden * out.parallelism.tp, 2 * a.intermediate, (a.heads + 2 * a.kv_heads) * a.head_dim, a.vocab});
  const std::optional<int64_t> per_sequence = sequence_tokens(w);
  const std::optional<int64_t> tokens = per_sequence ? checked_product({w.batch, *per_sequence}) : std::nullopt;
  if (tokens && checked_product({*tokens, width, 2}, static_cast<int64_t>(kMaxSimulatedBytes))) return;
  const std::string count = tokens ? std::to_string(*tokens) : "more than 2^63";
  in.fail(node["batch"], "workload: batch x tokens per sequence is " + count + " tokens, whose tensors (" +
                             std::to_string(width) +
                             " values wide) pass the largest size tpsim simulates, 1 PiB; "
                             "use a smaller batch or sequence");
}

}  // namespace

const std::vector<std::string>& workload_keys() {
  return kWorkloadKeys;
}

void read_workload(const YamlReader& in, const YAML::Node& node, Scenario& out) {
  in.expect_map(node, "workload", kWorkloadKeys);
  Workload& w = out.workload;
  w.phase = node["phase"] ? in.choice_of(node["phase"], "workload.phase", kPhaseNames) : Phase::kForward;
  const std::string phase = to_string(w.phase);
  if (w.phase == Phase::kOps) {
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      if (key != "phase" && key != "ops" && key != "dtype" && key != "cuda_graphs") {
        in.fail(entry.first,
                "workload." + key + " does not apply to phase ops (valid: phase, ops, dtype, cuda_graphs)");
      }
    }
    in.require(node, "ops", "workload with phase ops");
    w.ops = read_op_list(in, node["ops"]);
    if (node["cuda_graphs"]) w.cuda_graphs = in.boolean(node["cuda_graphs"], "workload.cuda_graphs");
    return;
  }
  if (!out.arch.hidden) in.fail(node, "the scenario needs a model for phase " + phase);
  in.require(node, "batch", "workload");
  w.batch = in.positive_int(node["batch"], "workload.batch");
  const PhaseKeys keys = keys_of(w.phase);
  const std::vector<std::pair<const char*, bool>> lengths = {
      {"seq_len", keys.seq_len}, {"context_len", keys.context_len}, {"gen_len", keys.gen_len}};
  for (const auto& [key, needed] : lengths) {
    if (needed) in.require(node, key, "workload with phase " + phase);
    if (!needed && node[key]) {
      in.fail(node[key],
              std::string("workload.") + key + " does not apply to phase " + phase +
                  " (forward, prefill, train: seq_len; decode: context_len; generate: context_len, gen_len)");
    }
  }
  if (keys.seq_len) w.seq_len = in.positive_int(node["seq_len"], "workload.seq_len");
  if (keys.context_len) w.context_len = in.positive_int(node["context_len"], "workload.context_len");
  if (keys.gen_len) w.gen_len = in.positive_int(node["gen_len"], "workload.gen_len");
  if (node["dtype"]) {
    w.dtype = in.choice_of(node["dtype"], "workload.dtype", kDtypeNames);
  }
  if (node["attention_dtype"]) {
    w.attention_dtype = in.choice_of(node["attention_dtype"], "workload.attention_dtype", kDtypeNames);
  }
  read_train_keys(in, node, out.parallelism.dp, w);
  if (node["cuda_graphs"]) w.cuda_graphs = in.boolean(node["cuda_graphs"], "workload.cuda_graphs");
  w.layers = out.arch.layers;
  if (node["layers"] && !(node["layers"].IsScalar() && node["layers"].Scalar() == "all")) {
    const int64_t layers = in.positive_int(node["layers"], "workload.layers (a number or 'all')");
    if (layers > out.arch.layers) {
      in.fail(node["layers"], "workload.layers is " + std::to_string(layers) + " but " + out.arch.name + " has " +
                                  std::to_string(out.arch.layers) + " layers");
    }
    w.layers = layers;
  }
  if (w.recompute_layers > w.layers) {
    in.fail(node["recompute_layers"], "workload.recompute_layers is " + std::to_string(w.recompute_layers) +
                                          " but the step runs " + std::to_string(w.layers) +
                                          " layers; give at most that many (or drop the key: every layer)");
  }
  check_workload_sizes(in, node, out);
}

}  // namespace tpsim::model
