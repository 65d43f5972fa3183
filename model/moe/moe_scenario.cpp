// Expert parallelism's scenario rules.
#include "model/moe/moe_scenario.hpp"

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "input/moe_routing_file.hpp"

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

RoutingSummary scenario_routing(const Scenario& s) {
  return summarize_routing(s.arch.moe, s.workload.expert_parallel, primary_pass(s.workload).tokens() / s.parallelism.tp,
                           s.workload.layers);
}

}  // namespace tpsim::model
