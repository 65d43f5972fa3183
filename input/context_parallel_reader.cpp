// parallelism.cp and parallelism.cp_comm_type: read and checked against what context parallelism models.
#include "input/context_parallel_reader.hpp"

#include <string>

namespace tpsim::model {

CpCommType read_cp_comm_type(const YamlReader& in, const YAML::Node& node, int cp) {
  const CpCommType type = in.choice_of(
      node, "parallelism.cp_comm_type (a2a+p2p, the hierarchical kind, is not modelled)", kCpCommTypeNames);
  if (cp < 2) in.fail(node, "parallelism.cp_comm_type applies to parallelism.cp of 2 or more (cp is 1)");
  return type;
}

namespace {

std::string text(int64_t n) {
  return std::to_string(n);
}

// What context parallelism cannot run for this scenario, or empty.
std::string unmodelled(const Scenario& s) {
  const Parallelism& p = s.parallelism;
  if (s.workload.phase != Phase::kTrain) return "parallelism.cp > 1 is modelled in phase train only";
  if (s.arch.latent.enabled()) return "parallelism.cp > 1 with multi-head latent attention is not modelled";
  if (s.arch.linear.enabled()) return "parallelism.cp > 1 with linear-attention layers is not modelled";
  if (s.arch.moe.enabled()) return "parallelism.cp > 1 with an MoE model is not modelled (experts over dp x cp)";
  if (s.arch.style.window > 0) {
    return "parallelism.cp > 1 with sliding-window attention is not modelled (a window skips ring steps); use cp 1";
  }
  if (s.workload.seq_len % (2 * p.cp) != 0) {
    return "parallelism.cp " + text(p.cp) + " splits each sequence zig-zag into 2 x cp = " + text(2 * p.cp) +
           " chunks; workload.seq_len " + text(s.workload.seq_len) + " is not a multiple of it";
  }
  return "";
}

}  // namespace

void apply_context_parallel(const YamlReader& in, const YAML::Node& parallelism, Scenario& out) {
  Parallelism& p = out.parallelism;
  if (p.cp < 2) return;
  if (const std::string why = unmodelled(out); !why.empty()) in.fail(parallelism["cp"], why);
  if (parallelism["order"] && p.order != MeshOrder::kTpDpPp) {
    in.fail(parallelism["order"],
            "parallelism.order [tp, pp, dp] with cp > 1 is not modelled: CP sits next to TP, the replicas outside it "
            "(Megatron's tp-cp-ep-dp-pp); valid: [tp, dp, pp]");
  }
  if (p.cp_comm == CpCommType::kA2a) {
    const TpShard shard = shard_for_tp(out.arch, p.tp);
    if (shard.q_heads % p.cp != 0 || shard.kv_heads % p.cp != 0) {
      in.fail(parallelism["cp_comm_type"], "parallelism.cp_comm_type a2a splits each TP rank's heads over cp (" +
                                               text(shard.q_heads) + " query and " + text(shard.kv_heads) +
                                               " K/V heads per rank), which cp " + text(p.cp) +
                                               " does not divide; valid: p2p or all_gather, or a cp dividing both");
    }
  }
  if (p.cp_comm == CpCommType::kTorchAllGather && out.workload.attention_dtype == Dtype::kFp8) {
    // PyTorch's context_parallel of the time calls SDPA's flash and memory-efficient kernels, bf16 only.
    in.fail(parallelism["cp_comm_type"],
            "parallelism.cp_comm_type torch_all_gather runs PyTorch's SDPA kernels, which have no fp8 attention; "
            "drop workload.attention_dtype fp8 or use p2p, all_gather or a2a (Transformer Engine's)");
  }
  ContextParallel& cp = out.workload.context_parallel;
  cp.degree = p.cp;
  cp.comm = p.cp_comm;
  cp.member_stride = p.tp;
}

}  // namespace tpsim::model
