// Scenario variants: each variant's keys by tp_mode, and the rules a variant must keep with the scenario's workload,
// parallelism and implementation, all with locations.
#include "input/variant_reader.hpp"

#include <set>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "base/size_checks.hpp"
#include "input/yaml_reader.hpp"
#include "model/parallel/async_tp.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

const std::vector<std::string>& variant_keys() {
  static const std::vector<std::string> keys = {"name",
                                                "tp_mode",
                                                "chunks",
                                                "transport",
                                                "order",
                                                "boundary_overlap",
                                                "delta",
                                                "dtp_collective",
                                                "collective",
                                                "protocol",
                                                "two_batch_overlap",
                                                "overlap_moe_expert_parallel_comm"};
  return keys;
}

namespace {

void read_async_keys(const YamlReader& in, const YAML::Node& node, const std::string& context, int tp, Variant& v) {
  v.chunks = tp;
  if (node["chunks"] && node["chunks"].IsScalar() && node["chunks"].Scalar() == "auto") {
    v.chunks_auto = true;
  } else if (node["chunks"]) {
    v.chunks = in.count(node["chunks"], context + ".chunks (a number or auto)", kMaxChunks);
    if (const std::string why = check_chunks(v.chunks, tp); !why.empty()) in.fail(node["chunks"], context + ": " + why);
  }
  if (node["transport"]) {
    v.transport = in.choice_of(node["transport"], context + ".transport", kTransportNames);
  }
  if (node["order"]) {
    v.order = in.choice_of(node["order"], context + ".order", kChunkOrderNames);
  }
  if (node["boundary_overlap"])
    v.boundary_overlap = in.boolean(node["boundary_overlap"], context + ".boundary_overlap");
}

void read_dtp_keys(const YamlReader& in, const YAML::Node& node, const std::string& context, Variant& v) {
  in.require(node, "delta", context + " (tp_mode dtp)");
  v.delta = static_cast<int>(
      in.int_in(node["delta"], context + ".delta, a whole number of modules (0 = blocking tp),", 0, 2 * kMaxLayers));
  if (node["dtp_collective"]) {
    v.dtp_allgather =
        in.choice(node["dtp_collective"], context + ".dtp_collective", {"allreduce", "allgather"}) == "allgather";
  }
}

// Keys that only some modes take; naming one on another mode is an error.
void reject_foreign_keys(const YamlReader& in, const YAML::Node& node, const std::string& context, TpMode mode) {
  const std::vector<std::pair<const char*, TpMode>> owned = {
      {"chunks", TpMode::kAsync},           {"transport", TpMode::kAsync}, {"order", TpMode::kAsync},
      {"boundary_overlap", TpMode::kAsync}, {"delta", TpMode::kDtp},       {"dtp_collective", TpMode::kDtp}};
  for (const auto& [key, owner] : owned) {
    if (node[key] && mode != owner) {
      in.fail(node[key], context + "." + key + " applies only to tp_mode: " + to_string(owner));
    }
  }
}

Variant read_variant(const YamlReader& in, const YAML::Node& node, int index, int tp) {
  const std::string context = "variants[" + std::to_string(index) + "]";
  in.expect_map(node, context, variant_keys());
  in.require(node, "tp_mode", context);
  Variant v;
  v.mode = in.choice_of(node["tp_mode"], context + ".tp_mode", kTpModeNames);
  v.name = node["name"] ? in.string(node["name"], context + ".name") : to_string(v.mode);
  reject_foreign_keys(in, node, context, v.mode);
  if (node["collective"]) {
    v.algorithm = in.choice_of(node["collective"], context + ".collective", kCollectiveAlgorithmNames);
  }
  if (node["protocol"]) {
    v.protocol = in.choice_of(node["protocol"], context + ".protocol", kProtocolNames);
  }
  if (node["two_batch_overlap"]) {
    v.two_batch_overlap = in.boolean(node["two_batch_overlap"], context + ".two_batch_overlap");
  }
  if (node["overlap_moe_expert_parallel_comm"]) {
    v.overlap_moe_expert_parallel_comm =
        in.boolean(node["overlap_moe_expert_parallel_comm"], context + ".overlap_moe_expert_parallel_comm");
  }
  if (v.mode == TpMode::kAsync) read_async_keys(in, node, context, tp, v);
  if (v.mode == TpMode::kDtp) read_dtp_keys(in, node, context, v);
  return v;
}

// That an async variant's chunks cut every pass's tokens evenly, located at its chunks (or tp_mode).
void check_chunk_plan(const YamlReader& in, const YAML::Node& node, size_t index, const Scenario& out,
                      const Variant& v) {
  try {
    plan_chunks(sharded_tokens(out.workload), out.parallelism.tp, v.chunks);
  } catch (const InputError& error) {
    in.fail(node["chunks"] ? node["chunks"] : node["tp_mode"],
            "variants[" + std::to_string(index) + "]: " + error.detail() + "; use another chunk count or batch");
  }
}

// PyTorch's symmetric-memory ops pull one shard per step with copy engines, in direct order, after the
// norm: the variant may not ask for anything else.
void check_symm_mem_variant(const YamlReader& in, const YAML::Node& node, size_t i, const Scenario& out,
                            const Variant& v) {
  const std::string at = "variants[" + std::to_string(i) + "]";
  const int tp = out.parallelism.tp;
  const std::string why = "implementation async_tp symm_mem (PyTorch's fused ops) ";
  if (v.chunks_auto || v.chunks != tp) {
    in.fail(node["chunks"] ? node["chunks"] : node,
            at + ".chunks: " + why + "runs one GEMM piece per rank's shard: chunks must be tp=" + std::to_string(tp));
  }
  if (v.transport != Transport::kCopyEngine) {
    in.fail(node["transport"], at + ".transport: " + why + "pulls with copy engines: use copy_engine");
  }
  if (v.order != ChunkOrder::kDirect) in.fail(node["order"], at + ".order: " + why + "pulls in direct order");
  if (v.boundary_overlap) {
    in.fail(node["boundary_overlap"], at + ".boundary_overlap: " + why + "gathers after the norm");
  }
}

// A tile-fused kernel computes each rank's shard of rows once they are in: its transfers go straight to or
// from their owners (direct order; a ring would need a kernel to add partials at every hop), and its
// input is the normed shard (a norm per gathered piece would be a kernel between the parts).
void check_tile_fused_variant(const YamlReader& in, const YAML::Node& node, size_t i, const Variant& v) {
  const std::string at = "variants[" + std::to_string(i) + "]";
  const std::string why = "implementation async_tp tile_fused (one GEMM kernel whose tiles wait for their rows) ";
  if (v.order != ChunkOrder::kDirect) {
    in.fail(node["order"], at + ".order: " + why + "moves each shard straight to or from its owner: use direct");
  }
  if (v.boundary_overlap) {
    in.fail(node["boundary_overlap"], at + ".boundary_overlap: " + why + "gathers the normed input: use false");
  }
}

// Transformer Engine's ring exchanges cut each linear into one GEMM per rank's shard (initialize_ub: num_splits
// tp_size), relay all-gathers in a ring and send reduce-scatter pieces to their owners (orders of their own),
// and gather the normed input.
void check_userbuffers_variant(const YamlReader& in, const YAML::Node& node, size_t i, const Scenario& out,
                               const Variant& v) {
  const std::string at = "variants[" + std::to_string(i) + "]";
  const int tp = out.parallelism.tp;
  const std::string why = "implementation async_tp userbuffers (Transformer Engine's ring exchanges) ";
  if (v.chunks_auto || v.chunks != tp) {
    in.fail(node["chunks"] ? node["chunks"] : node,
            at + ".chunks: " + why + "runs one GEMM piece per rank's shard: chunks must be tp=" + std::to_string(tp));
  }
  if (node["order"]) {
    in.fail(node["order"], at + ".order: " + why +
                               "relays all-gathers in a ring and sends reduce-scatter pieces "
                               "to their owners; leave order out");
  }
  if (v.boundary_overlap) {
    in.fail(node["boundary_overlap"], at + ".boundary_overlap: " + why + "gathers the normed input: use false");
  }
}

}  // namespace

void read_variants(const YamlReader& in, const YAML::Node& node, Scenario& out) {
  if (!node.IsSequence() || node.size() == 0) {
    in.fail(node, "variants must be a non-empty list of {name, tp_mode, ...}; the first is the baseline");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < node.size(); ++i) {
    Variant v = read_variant(in, node[i], static_cast<int>(i), out.parallelism.tp);
    if (out.workload.phase == Phase::kTrain && v.mode == TpMode::kDtp && v.delta > 0 &&
        out.workload.recompute != Recompute::kNone) {
      in.fail(node[i]["delta"], "variants[" + std::to_string(i) +
                                    "]: tp_mode dtp with delta > 0 under recomputation is not modelled (a recomputed "
                                    "layer would need the peers' shares its forward added); use recompute: none");
    }
    if (v.mode == TpMode::kSp || v.mode == TpMode::kAsync) {
      // Sequence sharding needs every pass's tokens to divide over the ranks (a decode step has batch tokens).
      const Workload& w = out.workload;
      const int64_t tokens = sharded_tokens(w);
      if (w.phase != Phase::kOps && tokens % out.parallelism.tp != 0) {
        in.fail(node[i]["tp_mode"], "variants[" + std::to_string(i) + "]: tp_mode " + to_string(v.mode) +
                                        " shards each pass's tokens over tp=" + std::to_string(out.parallelism.tp) +
                                        ", but a pass has " + std::to_string(tokens) +
                                        " tokens; use tp or dtp, or a batch divisible by tp");
      }
    }
    const Phase phase = out.workload.phase;
    if ((v.mode == TpMode::kSp || v.mode == TpMode::kAsync) && out.workload.whole_model &&
        (phase == Phase::kPrefill || phase == Phase::kGenerate)) {
      in.fail(node[i]["tp_mode"], "variants[" + std::to_string(i) + "]: tp_mode " + to_string(v.mode) +
                                      " shards the prompt's sequence, and the LM head over each sequence's last "
                                      "position (workload.whole_model) is not modelled for it; use tp or dtp, or "
                                      "drop whole_model");
    }
    if (v.mode == TpMode::kAsync && out.workload.implementation.async_tp == AsyncTpKernel::kSymmMem) {
      check_symm_mem_variant(in, node[i], i, out, v);
    }
    if (v.mode == TpMode::kAsync && out.workload.implementation.async_tp == AsyncTpKernel::kUserbuffers) {
      check_userbuffers_variant(in, node[i], i, out, v);
    }
    if (v.mode == TpMode::kAsync && out.workload.implementation.async_tp == AsyncTpKernel::kTileFused) {
      check_tile_fused_variant(in, node[i], i, v);
    }
    const bool pipelined = v.mode == TpMode::kAsync && !(v.chunks == 1 && v.transport == Transport::kSm);
    if (pipelined && fp8_gathers(out.workload) && out.workload.implementation.async_tp != AsyncTpKernel::kSymmMem) {
      in.fail(node[i]["tp_mode"],
              "variants[" + std::to_string(i) +
                  "]: fp8 all-gathers (implementation.fp8_all_gather under fp8_recipe "
                  "tensorwise or delayed) are modelled for sp's collectives and async_tp symm_mem's pulls, "
                  "not for async_tp " +
                  to_string(out.workload.implementation.async_tp) +
                  "; use async_tp: symm_mem or fp8_all_gather: false");
    }
    if (v.mode == TpMode::kAsync && !v.chunks_auto && out.workload.phase != Phase::kOps) {
      check_chunk_plan(in, node[i], i, out, v);
    }
    const int64_t modules = 2 * out.workload.layers;
    if (v.mode == TpMode::kDtp && v.delta >= modules) {
      in.fail(node[i]["delta"], "variants[" + std::to_string(i) + "].delta=" + std::to_string(v.delta) +
                                    " must be less than the " + std::to_string(modules) +
                                    " modules simulated (2 per layer)");
    }
    if (!names.insert(v.name).second)
      in.fail(node[i], "variant name '" + v.name + "' is used twice; names must be unique");
    out.variants.push_back(std::move(v));
  }
}

}  // namespace tpsim::model
