// The readers of the scenario sections that configure a parallel job: fsdp and ddp, moe (its routing and expert
// parallelism), pipeline, skew and parallelism.order. Each refuses at its key what cannot run, saying what is valid.
#include "input/section_readers.hpp"

#include <array>

#include <yaml-cpp/yaml.h>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "input/moe_routing_file.hpp"
#include "input/yaml_reader.hpp"
#include "model/graph/op.hpp"
#include "model/graph/workload.hpp"

namespace tpsim::model {
namespace {

// Zipf exponents past 4 put nearly every token on one expert; capacity factors past 64 cap nothing.
constexpr double kMaxZipf = 4.0;
constexpr double kMaxCapacityFactor = 64.0;
// A CV above one half describes another GPU, not the variability of one.
constexpr double kMaxCv = 0.5;
const char* const kValidOrders = "valid: [tp, dp, pp] (the default) or [tp, pp, dp]";

// <section>.reduce_dtype: the gradients' width in their reduction (FSDP2's MixedPrecisionPolicy.reduce_dtype,
// Megatron's grad_reduce_in_fp32).
double read_reduce_bytes(const YamlReader& in, const YAML::Node& node, const std::string& section) {
  if (!node["reduce_dtype"]) return 4.0;
  return in.choice(node["reduce_dtype"], section + ".reduce_dtype", {"fp32", "bf16"}) == "bf16" ? 2.0 : 4.0;
}

// The distributed_optimizer section (Megatron's DistributedDataParallelConfig names).
void read_distributed_optimizer(const YamlReader& in, const YAML::Node& node, DataParallel& dp) {
  in.expect_map(node, "distributed_optimizer", distributed_optimizer_keys());
  dp.distributed_optimizer = true;
  for (const auto& [key, flag] : {std::pair{"overlap_grad_reduce", &dp.overlap_grad_reduce},
                                  std::pair{"overlap_param_gather", &dp.overlap_param_gather}}) {
    if (node[key]) *flag = in.boolean(node[key], std::string("distributed_optimizer.") + key);
  }
  if (node["bucket_size"]) {
    dp.bucket_parameters =
        static_cast<double>(in.positive_int(node["bucket_size"], "distributed_optimizer.bucket_size"));
  }
  dp.reduce_bytes = read_reduce_bytes(in, node, "distributed_optimizer");
}

}  // namespace

void read_moe_routing(const YamlReader& in, const YAML::Node& node, ExpertParallel& out) {
  in.expect_map(node, "moe", moe_routing_keys());
  if (node["routing"]) {
    out.routing = in.choice_of(node["routing"], "moe.routing", kRoutingNames);
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
    out.dispatcher = in.choice_of(node["dispatcher"], "moe.dispatcher", kDispatcherNames);
  }
  if (node["deepep_mode"]) {
    if (out.dispatcher != Dispatcher::kDeepEp) {
      in.fail(node["deepep_mode"], "moe.deepep_mode applies to dispatcher: deepep only");
    }
    out.deepep_mode = in.choice_of(node["deepep_mode"], "moe.deepep_mode", kDeepEpModeNames);
  }
}

const std::vector<std::string>& distributed_optimizer_keys() {
  static const std::vector<std::string> keys = {"overlap_grad_reduce", "overlap_param_gather", "bucket_size",
                                                "reduce_dtype"};
  return keys;
}

const std::vector<std::string>& fsdp_keys() {
  static const std::vector<std::string> keys = {"shard_degree", "reshard_after_forward", "reduce_dtype",
                                                "fp8_all_gather", "precompute_fp8_scales"};
  return keys;
}

namespace {

// fsdp.fp8_all_gather and fsdp.precompute_fp8_scales: torchao casts only the weights of its tensorwise-scaled
// Float8Linear modules before FSDP's all-gather (Float8LinearConfig refuses other granularities), and precomputes
// the scales of those weights only.
void read_fsdp_fp8_gather(const YamlReader& in, const YAML::Node& fsdp, const Workload& workload, DataParallel& dp) {
  if (const YAML::Node key = fsdp["fp8_all_gather"]) {
    dp.fp8_all_gather = in.boolean(key, "fsdp.fp8_all_gather");
    if (dp.fp8_all_gather && (workload.dtype != Dtype::kFp8 || !per_tensor_scaled(workload.fp8_recipe))) {
      in.fail(key,
              "fsdp.fp8_all_gather gathers the weights of fp8 linears cast with one scale per tensor; it needs "
              "workload.dtype fp8 with fp8_recipe tensorwise or delayed (dtype is " +
                  to_string(workload.dtype) + ", fp8_recipe " + to_string(workload.fp8_recipe) + ")");
    }
  }
  if (const YAML::Node key = fsdp["precompute_fp8_scales"]) {
    dp.precompute_fp8_scales = in.boolean(key, "fsdp.precompute_fp8_scales");
    if (dp.precompute_fp8_scales && !dp.fp8_all_gather) {
      in.fail(key,
              "fsdp.precompute_fp8_scales computes the scales of weights gathered in fp8; it needs "
              "fsdp.fp8_all_gather: true");
    }
  }
}

}  // namespace

const std::vector<std::string>& ddp_keys() {
  static const std::vector<std::string> keys = {"bucket_MB", "reduce_dtype"};
  return keys;
}

DataParallel read_data_parallel(const YamlReader& in, const YAML::Node& fsdp, const YAML::Node& ddp,
                                const YAML::Node& distributed_optimizer, const YAML::Node& dp_key, int degree,
                                const Workload& workload) {
  DataParallel dp;
  dp.degree = degree;
  const std::array<std::pair<YAML::Node, const char*>, 3> sections = {
      std::pair{fsdp, "fsdp"}, std::pair{ddp, "ddp"}, std::pair{distributed_optimizer, "distributed_optimizer"}};
  for (const auto& [node, name] : sections) {
    if (node.IsDefined() && degree < 2) {
      in.fail(node, std::string(name) + " needs parallelism.dp of 2 or more (dp is " + std::to_string(degree) + ")");
    }
  }
  if (degree < 2) return dp;
  if (workload.phase != Phase::kTrain) {
    in.fail(dp_key, "parallelism.dp > 1 replicates a training step: it needs workload.phase train (phase is " +
                        to_string(workload.phase) +
                        "); inference replicas share nothing, so one replica's tokens/s times dp is theirs");
  }
  if (fsdp.IsDefined() && ddp.IsDefined()) {
    in.fail(ddp, "ddp and fsdp are two ways to run parallelism.dp; give one of them");
  }
  if (distributed_optimizer.IsDefined() && (fsdp.IsDefined() || ddp.IsDefined())) {
    in.fail(distributed_optimizer, std::string("distributed_optimizer and ") + (fsdp.IsDefined() ? "fsdp" : "ddp") +
                                       " are two ways to run parallelism.dp; give one of them");
  }
  if (distributed_optimizer.IsDefined()) read_distributed_optimizer(in, distributed_optimizer, dp);
  if (fsdp.IsDefined()) {
    in.expect_map(fsdp, "fsdp", fsdp_keys());
    dp.fsdp = true;
    dp.shard_degree = degree;
    if (const YAML::Node shards = fsdp["shard_degree"]) {
      const int64_t value = in.positive_int(shards, "fsdp.shard_degree");
      if (value < 2 || value > degree || degree % value != 0) {
        in.fail(shards, "fsdp.shard_degree " + std::to_string(value) + " must divide the " + std::to_string(degree) +
                            " replicas and be 2 or more; valid: a divisor of parallelism.dp (" +
                            std::to_string(degree) + ": full sharding) from 2 (hybrid sharding below it)");
      }
      dp.shard_degree = static_cast<int>(value);
    }
    if (fsdp["reshard_after_forward"]) {
      dp.reshard_after_forward = in.boolean(fsdp["reshard_after_forward"], "fsdp.reshard_after_forward");
    }
    dp.reduce_bytes = read_reduce_bytes(in, fsdp, "fsdp");
    read_fsdp_fp8_gather(in, fsdp, workload, dp);
  }
  if (ddp.IsDefined()) {
    in.expect_map(ddp, "ddp", ddp_keys());
    if (ddp["bucket_MB"]) dp.bucket_bytes = in.number_in(ddp["bucket_MB"], "ddp.bucket_MB", 0.001, 1e6) * 1024 * 1024;
    dp.reduce_bytes = read_reduce_bytes(in, ddp, "ddp");
  }
  return dp;
}

const std::vector<std::string>& moe_routing_keys() {
  static const std::vector<std::string> keys = {"routing",         "zipf_s", "file",       "drop",
                                                "capacity_factor", "seed",   "dispatcher", "deepep_mode"};
  return keys;
}

// pipeline.chunk_layers: `chunks` positive layer counts adding up to the workload's layers.
std::vector<int64_t> read_chunk_layers(const YamlReader& in, const YAML::Node& node, int64_t chunks, int64_t layers) {
  const std::string valid = std::to_string(chunks) +
                            " layer counts (pp x virtual_stages), at least 1 each, adding up to "
                            "the " +
                            std::to_string(layers) + " layers";
  if (!node.IsSequence() || static_cast<int64_t>(node.size()) != chunks) {
    in.fail(node, "pipeline.chunk_layers must be a list of " + valid);
  }
  std::vector<int64_t> out;
  int64_t sum = 0;
  for (const YAML::Node& entry : node) {
    out.push_back(in.positive_int(entry, "pipeline.chunk_layers entry"));
    sum += out.back();
  }
  if (sum != layers) in.fail(node, "pipeline.chunk_layers add up to " + std::to_string(sum) + "; valid: " + valid);
  return out;
}

const std::vector<std::string>& pipeline_keys() {
  static const std::vector<std::string> keys = {"schedule", "virtual_stages", "chunk_layers"};
  return keys;
}

PipelineSpec read_pipeline(const YamlReader& in, const YAML::Node& node, const YAML::Node& pp_key, int stages,
                           const Workload& workload) {
  PipelineSpec spec;
  const YAML::Node where = node.IsDefined() ? node : pp_key;
  if (stages < 2) {
    if (node.IsDefined())
      in.fail(node, "pipeline needs parallelism.pp of 2 or more (pp is " + std::to_string(stages) + ")");
    return spec;
  }
  if (workload.phase != Phase::kTrain) {
    in.fail(pp_key, "parallelism.pp > 1 pipelines a training step: it needs workload.phase train (phase is " +
                        to_string(workload.phase) + ")");
  }
  if (node.IsDefined()) {
    in.expect_map(node, "pipeline", pipeline_keys());
    if (const YAML::Node s = node["schedule"]) {
      if (s.IsScalar() && (s.Scalar() == "dualpipe" || s.Scalar() == "dualpipev")) {
        in.fail(s, "pipeline.schedule " + s.Scalar() +
                       " (DeepSeek-V3's bidirectional pipeline, micro-batches fed from both ends with one's forward "
                       "beside another's backward) is not modelled: the pipeline model runs one direction; valid: "
                       "gpipe, 1f1b, interleaved, zb-h1, zb-v (the V-shaped placement DualPipeV builds on)");
      }
      spec.schedule = in.choice_of(s, "pipeline.schedule", kPipelineScheduleNames);
    }
    if (const YAML::Node v = node["virtual_stages"]) {
      // A bound on the input only: the layers must still split into stages x virtual_stages chunks of at least one.
      spec.virtual_stages = static_cast<int>(in.int_in(v, "pipeline.virtual_stages", 1, 64));
    }
  }
  const int64_t chunks = static_cast<int64_t>(stages) * spec.virtual_stages;
  if (node.IsDefined() && node["chunk_layers"]) {
    spec.chunk_layers = read_chunk_layers(in, node["chunk_layers"], chunks, workload.layers);
  } else if (workload.layers % chunks != 0) {
    in.fail(where, std::to_string(workload.layers) + " layers do not split evenly into " + std::to_string(stages) +
                       " stages x " + std::to_string(spec.virtual_stages) +
                       " virtual stages; valid: workload.layers a multiple of " + std::to_string(chunks) +
                       ", or pipeline.chunk_layers");
  }
  const std::string why =
      pipeline_schedule_problem(spec.schedule, stages, static_cast<int>(workload.microbatches), spec.virtual_stages);
  if (!why.empty()) in.fail(where, "pipeline.schedule " + to_string(spec.schedule) + ": " + why);
  return spec;
}

const std::vector<std::string>& rank_skew_keys() {
  static const std::vector<std::string> keys = {"kernel_cv", "gpu_cv", "seed"};
  return keys;
}

RankSkew read_rank_skew(const YamlReader& in, const YAML::Node& node) {
  in.expect_map(node, "skew", rank_skew_keys());
  RankSkew skew;
  if (node["kernel_cv"]) skew.kernel_cv = in.number_in(node["kernel_cv"], "skew.kernel_cv", 0, kMaxCv);
  if (node["gpu_cv"]) skew.gpu_cv = in.number_in(node["gpu_cv"], "skew.gpu_cv", 0, kMaxCv);
  if (node["seed"]) skew.seed = in.seed(node["seed"], "skew.seed");
  if (!skew.enabled()) in.fail(node, "skew needs kernel_cv or gpu_cv above 0 (without either, leave the section out)");
  return skew;
}

MeshOrder read_mesh_order(const YamlReader& in, const YAML::Node& node) {
  std::string names;
  if (node.IsSequence() && node.size() == 3) {
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) in.fail(item, std::string("parallelism.order lists dimension names; ") + kValidOrders);
      names += (names.empty() ? "" : ", ") + item.Scalar();
    }
  }
  if (const std::optional<MeshOrder> order = value_named(kMeshOrderNames, names)) return *order;
  in.fail(node,
          "parallelism.order must name tp, pp and dp once each, innermost first, with tp first (tpsim "
          "simulates a TP group on consecutive GPUs); " +
              std::string(kValidOrders));
}

}  // namespace tpsim::model

namespace tpsim::model {
namespace {

// Under expert parallelism with tp > 1 every variant must route each rank's own rows: Megatron requires sequence
// parallelism with MoE. Under expert TP (ep 1) every rank computes every token's copies for its slices, so tp
// works too; DTP's delayed reductions are not modelled around an MoE layer.
void refuse_replicated_rows(const YamlReader& in, const YAML::Node& variants, const Scenario& out) {
  if (out.parallelism.tp == 1) return;
  const bool expert_tp = experts_split_over_tp(out.parallelism.tp, out.parallelism.ep);
  for (size_t i = 0; i < out.variants.size(); ++i) {
    const TpMode mode = out.variants[i].mode;
    if (expert_tp && mode == TpMode::kDtp) {
      in.fail(variants[i]["tp_mode"], "variant " + out.variants[i].name +
                                          ": tp_mode dtp around an MoE layer is not modelled yet; use tp, sp, async "
                                          "or nocomm");
    }
    if (expert_tp) continue;
    if (const int64_t tokens = sharded_tokens(out.workload);
        mode == TpMode::kNoComm && tokens % out.parallelism.tp != 0) {
      in.fail(variants[i]["tp_mode"],
              "variant " + out.variants[i].name +
                  ": tp_mode nocomm shards a pass's tokens only when they divide by tp=" +
                  std::to_string(out.parallelism.tp) + ", and a pass has " + std::to_string(tokens) +
                  ", so every rank would hold every token and an MoE layer's ranks would route the same ones; use a "
                  "batch divisible by tp");
    }
    if (mode != TpMode::kTp && mode != TpMode::kDtp) continue;
    in.fail(variants[i]["tp_mode"],
            "variant " + out.variants[i].name + ": tp_mode " + to_string(mode) + " holds every token on every rank, " +
                "so an MoE layer's ranks would route the same tokens; with tp > 1 an MoE model needs sp, async or "
                "nocomm (Megatron requires --sequence-parallel with MoE)");
  }
}

// Two-batch overlap splits a pass's (or a training micro-batch's) sequences in two and interleaves their MoE stages:
// it needs an MoE model whose experts are split over GPUs (all-to-alls to hide), an even batch, a mode without
// delayed reductions and, in training, no recomputation.
void check_two_batch_overlap(const YamlReader& in, const YAML::Node& root, const Scenario& out) {
  const YAML::Node variants = root["variants"];
  for (size_t i = 0; i < out.variants.size(); ++i) {
    if (!out.variants[i].two_batch_overlap) continue;
    const YAML::Node at = variants[i]["two_batch_overlap"];
    const std::string what = "variants[" + std::to_string(i) + "].two_batch_overlap: ";
    if (!out.arch.moe.enabled() || out.parallelism.ep == 1) {
      in.fail(at, what +
                      "overlaps one half-batch's expert all-to-alls with the other's compute, so it needs an MoE "
                      "model with parallelism.ep > 1");
    }
    const Phase phase = out.workload.phase;
    if (phase == Phase::kForward || phase == Phase::kOps) {
      in.fail(at, what + "applies to phases prefill, decode, generate and train; phase " + to_string(phase) +
                      " is not modelled with it");
    }
    if (phase == Phase::kTrain && out.workload.recompute != Recompute::kNone) {
      in.fail(at, what +
                      "in phase train runs without recomputation (its halves' interleaved backward is not "
                      "modelled with a layer's forward re-run); use recompute: none");
    }
    if (out.workload.whole_model && phase != Phase::kTrain) {
      in.fail(at, what +
                      "interleaves the decoder layers' halves only; the model's ends (workload.whole_model: the "
                      "embedding, LM head and loss) are not modelled with it; drop whole_model");
    }
    if (out.workload.batch % 2 != 0) {
      in.fail(at, what + "splits the batch's sequences in two halves: workload.batch (" +
                      std::to_string(out.workload.batch) + ") must be even");
    }
    if (out.variants[i].mode == TpMode::kDtp) in.fail(at, what + "is not modelled with tp_mode dtp");
    // Each half's tokens are sharded over the TP group under sp and async.
    const TpMode mode = out.variants[i].mode;
    const bool whole_sequences = phase == Phase::kPrefill || phase == Phase::kTrain;
    const int64_t half = out.workload.batch / 2 * (whole_sequences ? out.workload.seq_len : 1);
    if ((mode == TpMode::kSp || mode == TpMode::kAsync) && half % out.parallelism.tp != 0) {
      in.fail(at, what + "each half-batch's tokens of a pass (" + std::to_string(half) +
                      ") must divide by tp=" + std::to_string(out.parallelism.tp) + " to shard the sequence");
    }
  }
}

// Megatron's combined 1F1B schedule (overlap_moe_expert_parallel_comm) as Megatron's TransformerConfig admits it
// (expert parallelism, no full recomputation), modelled without a pipeline and without recomputation.
void check_combined_1f1b(const YamlReader& in, const YAML::Node& root, const Scenario& out) {
  const YAML::Node variants = root["variants"];
  for (size_t i = 0; i < out.variants.size(); ++i) {
    const Variant& v = out.variants[i];
    if (!v.overlap_moe_expert_parallel_comm) continue;
    const YAML::Node at = variants[i]["overlap_moe_expert_parallel_comm"];
    const std::string what = "variants[" + std::to_string(i) + "].overlap_moe_expert_parallel_comm: ";
    if (!out.arch.moe.enabled() || out.parallelism.ep == 1) {
      in.fail(at, what +
                      "overlaps one micro-batch's expert all-to-alls with another's compute, so it needs an MoE "
                      "model with parallelism.ep > 1 (as Megatron requires)");
    }
    if (out.workload.phase != Phase::kTrain) {
      in.fail(at, what + "is a training schedule (forward beside backward); phase " + to_string(out.workload.phase) +
                      " has no backward: use two_batch_overlap");
    }
    if (out.workload.recompute != Recompute::kNone) {
      in.fail(at, what +
                      "is modelled without recomputation (Megatron refuses full recomputation with it; its "
                      "selective recomputation is not modelled with the combined order); use recompute: none");
    }
    if (out.parallelism.pp > 1) {
      in.fail(at, what +
                      "under parallelism.pp > 1 Megatron runs it inside the interleaved pipeline schedule, which "
                      "is not modelled yet; use pp: 1");
    }
    if (v.two_batch_overlap) in.fail(at, what + "and two_batch_overlap are two overlap schedules; give one of them");
    if (v.mode == TpMode::kDtp) in.fail(at, what + "is not modelled with tp_mode dtp; use tp, sp or async");
    if (out.workload.data_parallel.fsdp) {
      in.fail(at, what +
                      "is not modelled with fsdp (its gathers before each backward); use distributed_optimizer "
                      "or ddp");
    }
  }
}

}  // namespace

void read_expert_parallel(const YamlReader& in, const YAML::Node& root, Scenario& out) {
  const YAML::Node par = root["parallelism"];
  const int tp = out.parallelism.tp, ep = out.parallelism.ep, etp = out.parallelism.etp;
  const bool moe = out.arch.moe.enabled();
  if (root["variants"]) {
    check_two_batch_overlap(in, root, out);
    check_combined_1f1b(in, root, out);
  }
  if (etp > 1 && (!moe || ep == 1)) {
    in.fail(par["etp"], "parallelism.etp slices each expert inside an expert-parallel group (ep > 1); " +
                            std::string(moe ? "with ep 1 every expert is split over the TP group already (expert TP)"
                                            : "model " + out.arch.name + " has a dense FFN") +
                            "; use etp: 1");
  }
  if (!moe) {
    if (ep > 1) {
      in.fail(par["ep"],
              "parallelism.ep splits an MoE model's experts; model " + out.arch.name + " has a dense FFN (use ep: 1)");
    }
    if (root["moe"])
      in.fail(root["moe"], "the moe section routes an MoE model's tokens; model " + out.arch.name + " has a dense FFN");
    return;
  }
  const YAML::Node at = par["ep"] ? par["ep"] : par;
  if (out.arch.moe.experts % ep != 0) {
    in.fail(at, "parallelism.ep (" + std::to_string(ep) + ") must divide the " + std::to_string(out.arch.moe.experts) +
                    " experts of " + out.arch.name);
  }
  if (ep > 1 && (ep * etp) % tp != 0) {
    in.fail(at, "parallelism.ep x etp (" + std::to_string(ep) + " x " + std::to_string(etp) +
                    ") must be 1 or a multiple of tp (" + std::to_string(tp) +
                    "): the expert-parallel group (each expert sliced over etp of its GPUs) is whole TP groups of "
                    "consecutive GPUs, or ep 1 splits every expert over the TP group (expert TP)");
  }
  if (etp > 1) {
    try {
      shard_for_tp(out.arch, tp, ep, etp);
    } catch (const InputError& error) {
      in.fail(par["etp"], error.what());
    }
  }
  if (ep > 1 && out.parallelism.pp > 1 && out.parallelism.order != MeshOrder::kTpDpPp) {
    // A stage's replicas then sit tp x pp GPUs apart: its expert-parallel group would not be consecutive GPUs.
    in.fail(par["order"] ? par["order"] : at,
            "parallelism.ep > 1 under a pipeline needs parallelism.order [tp, dp, pp] (the default: a stage's "
            "data-parallel replicas on consecutive GPUs, which its expert-parallel group is made of)");
  }
  if (out.workload.phase == Phase::kTrain && (tp * out.parallelism.dp) % (ep * etp) != 0) {
    in.fail(at, "parallelism.ep" + std::string(etp > 1 ? " x etp (" : " (") + std::to_string(ep * etp) +
                    ") must divide tp x dp = " + std::to_string(tp * out.parallelism.dp) +
                    ": a training step's expert-parallel group is made of its data-parallel replicas' GPUs");
  }
  if (out.workload.data_parallel.hybrid()) {
    in.fail(root["fsdp"]["shard_degree"],
            "fsdp.shard_degree below parallelism.dp (hybrid sharding) of an MoE model is not modelled (its experts "
            "shard over the expert-data-parallel group); valid: " +
                std::to_string(out.parallelism.dp) + " (full sharding), or distributed_optimizer or ddp");
  }
  if (out.workload.dtype == Dtype::kFp8 && out.workload.phase == Phase::kTrain) {
    in.fail(root["workload"]["dtype"],
            "workload.dtype fp8 training of an MoE model is not modelled yet (the fp8 recipes' casts of the grouped "
            "expert GEMMs' operands); use bf16, or fp8 in an inference phase");
  }
  if (root["variants"]) refuse_replicated_rows(in, root["variants"], out);
  out.workload.expert_parallel.degree = ep;
  out.workload.expert_parallel.tensor_degree = etp;
  if (root["moe"]) read_moe_routing(in, root["moe"], out.workload.expert_parallel);
  if (out.workload.expert_parallel.dispatcher == Dispatcher::kDeepEp && etp > 1) {
    in.fail(root["moe"]["dispatcher"],
            "moe.dispatcher deepep sends whole tokens to whole experts; with parallelism.etp > 1 (experts sliced "
            "inside the group) use dispatcher nccl");
  }
  if (out.workload.expert_parallel.dispatcher == Dispatcher::kDeepEp && ep == 1) {
    in.fail(root["moe"]["dispatcher"],
            "moe.dispatcher deepep runs the expert-parallel all-to-alls, and with "
            "parallelism.ep 1 there are none; use ep > 1, or dispatcher nccl");
  }
  if (out.workload.expert_parallel.deepep_mode == DeepEpMode::kLowLatency && out.workload.phase == Phase::kTrain) {
    in.fail(root["moe"]["deepep_mode"],
            "moe.deepep_mode low_latency runs DeepEP's decode kernels, which have no backward; use auto or normal "
            "in phase train");
  }
  if (ExpertParallel& routing = out.workload.expert_parallel; routing.routing == Routing::kFromFile) {
    const std::string path = resolve_relative(in.file(), routing.routing_file);
    try {
      routing.layer_shares = read_routing_file(path, out.arch.moe.experts, out.arch.layers, out.workload.layers);
    } catch (const InputError& error) {
      if (error.detail() != error.what()) throw;  // located in the routing file itself
      in.fail(root["moe"]["file"], "moe.file: " + error.detail());
    }
  }
}

}  // namespace tpsim::model
