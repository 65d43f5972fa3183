// One attention kernel's forward and backward predicted from the profile's rates, reported with FlashAttention's
// FLOP count (4 b h d pairs forward, 2.5 times that backward; a causal square's pairs are half of L^2).
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "base/size_checks.hpp"
#include "base/units.hpp"
#include "cli/commands/predict/predict_command.hpp"
#include "model/graph/op.hpp"
#include "model/layers/attention_dims.hpp"

namespace tpsim::cli {
namespace {

// The query's key/value heads and keys, their defaults (--heads, --seq) applied.
int64_t kv_heads_of(const AttentionQuery& q) {
  return q.kv_heads > 0 ? q.kv_heads : q.heads;
}
int64_t keys_of(const AttentionQuery& q) {
  return q.keys > 0 ? q.keys : q.queries;
}

// Why the query's shape cannot be predicted; empty when it can.
std::string shape_problem(const AttentionQuery& q) {
  if (q.batch < 1 || q.heads < 1 || q.kv_heads < 0 || q.queries < 1 || q.keys < 0 || q.head_dim < 1) {
    return "--batch, --heads, --seq and --head-dim must be positive integers (--kv-heads and --kv-seq too, when given)";
  }
  const int64_t kv_heads = kv_heads_of(q);
  if (q.heads % kv_heads != 0) {
    return "--heads " + std::to_string(q.heads) + " is not a multiple of --kv-heads " + std::to_string(kv_heads);
  }
  if (q.keys > 0 && q.keys < q.queries && q.mask == "causal") {
    return "--kv-seq " + std::to_string(q.keys) + " under --seq " + std::to_string(q.queries) +
           ": causal queries are the last of the keys (use --mask none for a block of fewer keys)";
  }
  constexpr auto kMaxElements = static_cast<int64_t>(model::kMaxSimulatedBytes / 2);
  const int64_t keys = keys_of(q);
  if (!model::checked_product({q.batch, q.heads, q.queries, q.head_dim}, kMaxElements) ||
      !model::checked_product({q.batch, kv_heads, keys, q.head_dim}, kMaxElements)) {
    return "a Q, K or V tensor over the largest size tpsim simulates, 1 PiB";
  }
  return "";
}

// The pass as the layers' ops see it: the new queries after the keys before them.
model::AttentionDims dims_of(const AttentionQuery& q) {
  model::AttentionDims a;
  const int64_t keys = keys_of(q);
  a.batch = static_cast<double>(q.batch);
  a.hq = static_cast<double>(q.heads);
  a.hkv = static_cast<double>(kv_heads_of(q));
  a.d = static_cast<double>(q.head_dim);
  a.causal = q.mask == "causal";
  // Causal: the queries are the last of the keys (those before them cached); unmasked: every query sees every key,
  // c + q of them.
  a.q = static_cast<double>(q.queries);
  a.c = static_cast<double>(keys - q.queries);
  return a;
}

model::Op attention_op(const model::AttentionDims& a, model::OpStage stage, bool fp8) {
  const double e = model::kBf16Bytes, qkv = fp8 ? model::kFp8Bytes : e;
  model::Op op;
  op.kind = model::OpKind::kAttention;
  op.stage = stage;
  op.fp8 = fp8 && stage == model::OpStage::kForward;
  op.causal_inverse_length = a.causal_inverse_length();
  if (stage == model::OpStage::kForward) {
    op.flops = a.forward_flops();
    op.bytes_read = a.query_bytes(qkv) + a.key_value_bytes(qkv);
    op.bytes_written = a.output_bytes(e);
  } else {
    op.flops = model::kAttentionBackwardFlopRatio * a.forward_flops();
    op.bytes_read = a.backward_read_bytes(e);
    op.bytes_written = a.backward_written_bytes(e);
  }
  return op;
}

struct PassCost {
  double seconds = 0;
  double tflops = 0;
  bool memory_bound = false;
};

PassCost pass_cost(const sim::CostModel& cost, const model::Op& op) {
  const sim::KernelCost k = cost.kernel_cost(op);
  return {k.seconds(), op.flops / k.seconds() / 1e12, k.memory_bound()};
}

}  // namespace

int predict_attention(const PredictTarget& target, const AttentionQuery& q) {
  if (const std::string why = shape_problem(q); !why.empty()) throw InputError(why);
  if (q.mask != "causal" && q.mask != "none") throw InputError("--mask " + q.mask + ": valid: causal, none");
  if (q.dtype != "bf16" && q.dtype != "fp8") throw InputError("--dtype " + q.dtype + ": valid: bf16, fp8");
  sim::CostModel base = predict_cost_model(target);
  sim::CostProfile profile = base.profile();
  const std::string kernel = q.kernel.empty() ? profile.attention.kernel : q.kernel;
  if (const std::string why = sim::select_attention_kernel(profile, kernel); !why.empty()) {
    throw InputError("--kernel " + kernel + ": " + why);
  }
  const sim::CostModel cost(base.gpu(), profile);
  const bool fp8 = q.dtype == "fp8";
  if (const std::string why = fp8 ? cost.fp8_attention_unsupported_reason() : ""; !why.empty()) {
    throw InputError("--dtype fp8: " + why);
  }
  const model::AttentionDims a = dims_of(q);
  const PassCost forward = pass_cost(cost, attention_op(a, model::OpStage::kForward, fp8));
  const std::string no_backward = cost.attention_backward_unsupported_reason();
  const PassCost backward =
      no_backward.empty() ? pass_cost(cost, attention_op(a, model::OpStage::kBackward, fp8)) : PassCost{};
  const int64_t kv_heads = kv_heads_of(q), keys = keys_of(q);
  if (target.json) {
    nlohmann::ordered_json j;
    j["gpu"] = cost.gpu().name;
    j["kernel"] = kernel.empty() ? "unnamed" : kernel;
    j["mask"] = q.mask;
    j["dtype"] = q.dtype;
    j["batch"] = q.batch;
    j["heads"] = q.heads;
    j["kv_heads"] = kv_heads;
    j["seq"] = q.queries;
    j["kv_seq"] = keys;
    j["head_dim"] = q.head_dim;
    j["forward"] = {{"time_s", forward.seconds}, {"tflops", forward.tflops}, {"memory_bound", forward.memory_bound}};
    if (no_backward.empty()) {
      j["backward"] = {
          {"time_s", backward.seconds}, {"tflops", backward.tflops}, {"memory_bound", backward.memory_bound}};
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "attention " << (kernel.empty() ? "(kernel unnamed)" : kernel) << " " << q.mask << " " << q.dtype
            << " on " << cost.gpu().name << ": batch " << q.batch << " x " << q.heads << " heads (" << kv_heads
            << " KV) x " << q.queries << " queries over " << keys << " keys, head dim " << q.head_dim << "\n";
  const auto line = [](const char* pass, const PassCost& c) {
    std::cout << "  " << pass << " " << model::format_number("%.3f", c.seconds * 1e6) << " us, "
              << model::format_number("%.1f", c.tflops) << " TFLOP/s" << (c.memory_bound ? " (bound by HBM)" : "")
              << "\n";
  };
  line("forward ", forward);
  if (no_backward.empty()) {
    line("backward", backward);
  } else {
    std::cout << "  backward not predicted: " << no_backward << "\n";
  }
  return 0;
}

}  // namespace tpsim::cli
