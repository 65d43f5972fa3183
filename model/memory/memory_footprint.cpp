// Per-GPU bytes of weights, KV cache, activations and TP-mode buffers, from the layers' shapes.
#include "model/memory/memory_footprint.hpp"

#include <algorithm>
#include <vector>

#include "model/graph/graph_builder.hpp"
#include "model/graph/op.hpp"
#include "model/memory/activation_memory.hpp"
#include "model/memory/loss_memory.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/parallel/context_parallel.hpp"

namespace tpsim::model {
namespace {

// Distinct inputs whose saved activations a process remembers (a bound on the memo's memory, far above a plan's
// distinct pipeline chunks).
constexpr size_t kMaxKnownSavedActivations = 4096;

// The distributed optimizer's gradient and state bytes of `params` local parameters, `experts` of them an MoE
// layer's (sharded over the expert-data-parallel group `expert_dp`, the rest over dp). Megatron-LM's
// docs/user-guide/features/dist_optimizer.md: bf16 parameters with fp32 gradients 6 + 12/d bytes per parameter
// (the whole bf16 parameters and fp32 gradient buffer, 12/d of fp32 master weights and both moments); with 16-bit
// gradients 4 + 16/d (its fp16 row: the fp32 main gradient is a shard too).
void distributed_optimizer_state(const DataParallel& dp, double params, double experts, int expert_dp,
                                 MemoryFootprint& m) {
  const double shard = (params - experts) / dp.degree + experts / expert_dp;
  const double state_per_param = kAdamWStateBytesPerParameter + (dp.reduce_bytes < 4 ? 4.0 : 0.0);
  m.gradient_bytes = dp.reduce_bytes * params;
  m.optimizer_bytes = state_per_param * shard;
}

// The largest number of tokens one pass of the workload runs (a generate's prefill).
double pass_tokens(const Workload& w) {
  return static_cast<double>(primary_pass(w).tokens());
}

// The bf16 (fp8 inference: e4m3) weights of the range's layers and the model's ends on this rank.
double weight_bytes(const ArchSpec& a, const Workload& w, const TpShard& s, const LayerRange& range, int tp) {
  const double layers = static_cast<double>(w.layers);
  // fp8 inference holds e4m3 weights; fp8 training keeps bf16 weights and casts them before each GEMM.
  const double linear_bytes = w.dtype == Dtype::kFp8 && w.phase != Phase::kTrain ? kFp8Bytes : kBf16Bytes;
  const double layer_weights = a.uniform(range)
                                   ? layers * (linear_parameters_per_layer(a, s, a.kind(range.first)) * linear_bytes +
                                               small_parameters_per_layer(a, s) * kBf16Bytes)
                                   : linear_parameters_of_layers(a, s, range) * linear_bytes +
                                         layers * small_parameters_per_layer(a, s) * kBf16Bytes;
  return layer_weights + end_parameters_per_rank(a, w.implementation.model_ends == ModelEndsMode::kReplicated ? 1 : tp,
                                                 w.embedding, w.head) *
                             kBf16Bytes;
}

// The KV cache (and a hybrid stack's recurrent state) a decode or generate holds for the whole context.
double kv_cache_bytes(const ArchSpec& a, const Workload& w, const TpShard& s, const LayerRange& range) {
  const double layers = static_cast<double>(w.layers), hd = static_cast<double>(a.head_dim);
  const double context = static_cast<double>(w.context_len + (w.phase == Phase::kGenerate ? w.gen_len : 1));
  const double kv_bytes = w.attention_dtype == Dtype::kFp8 ? kFp8Bytes : kBf16Bytes;
  // Full-attention layers hold K and V for every token; a hybrid stack's linear-attention layers hold each
  // sequence's recurrent state and its convolution's last K - 1 inputs, whatever the context.
  const auto linear = static_cast<double>(a.linear.linear_count(range));
  // An MLA layer holds one latent and rotary key per token for all heads, on every TP rank.
  const double per_token =
      a.latent.enabled() ? static_cast<double>(a.latent.cache_width()) : 2.0 * static_cast<double>(s.kv_heads) * hd;
  // A sliding-window layer keeps only the last `window` tokens (Mistral 7B's rolling buffer cache, arXiv
  // 2310.06825 section 2; docs/inference.md).
  const auto windowed = static_cast<double>(a.windowed_count(range));
  const double window_context = std::min(context, static_cast<double>(a.style.window));
  double bytes = (layers - linear - windowed) * per_token * static_cast<double>(w.batch) * context * kv_bytes;
  if (windowed > 0) bytes += windowed * per_token * static_cast<double>(w.batch) * window_context * kv_bytes;
  if (a.linear.enabled()) {
    const LinearAttentionSpec& l = a.linear;
    const auto keys = static_cast<double>(s.linear_key_heads * l.key_head_dim);
    const auto values = static_cast<double>(s.linear_value_heads * l.value_head_dim);
    const double state = values * static_cast<double>(l.key_head_dim) * l.state_bytes;
    const double conv = static_cast<double>(l.conv_kernel - 1) * (2.0 * keys + values) * kBf16Bytes;
    bytes += linear * static_cast<double>(w.batch) * (state + conv);
  }
  return bytes;
}

// The live block at its largest: the residual stream beside the attention's or the MLP's tensors.
double live_block_bytes(const ArchSpec& a, const Workload& w, const Variant& v, const TpShard& s,
                        const LayerRange& range, int tp) {
  const double hidden = static_cast<double>(a.hidden), hd = static_cast<double>(a.head_dim);
  const double tokens = pass_tokens(w);
  const bool sequence_sharded = v.mode == TpMode::kSp || v.mode == TpMode::kAsync;
  const double residual = (sequence_sharded ? tokens / tp : tokens) * hidden;
  // The block's gathered input, its projections' outputs and the row-parallel output before reduction.
  double attention = tokens * (hidden + static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd +
                               static_cast<double>(s.q_heads) * hd + hidden);
  if (a.latent.enabled()) {
    // MLA: the latents, every head's query, key and value, and the attention output.
    const LatentAttentionSpec& l = a.latent;
    const auto heads = static_cast<double>(s.q_heads);
    attention = tokens * (hidden + static_cast<double>(l.q_lora_rank + l.cache_width()) +
                          heads * static_cast<double>(2 * l.qk_head_dim() + 2 * l.value_head_dim) + hidden);
  }
  // The gathered input, gate/up (or up) and the activation's output, the row-parallel output.
  const double dense_mlp =
      tokens * (hidden + static_cast<double>(a.up_projections() + 1) * static_cast<double>(s.ffn) + hidden);
  double moe_mlp = 0.0;
  if (a.moe.enabled()) {
    // The rank's rows' copies permuted and returned, and its experts' gate/up and SwiGLU outputs (balanced); under
    // expert TP every token's copies.
    const bool own_rows = sequence_sharded && !s.expert_tp;
    // Expert TP inside the group: the slice's GPUs gather each other's received copies.
    const double rows =
        (own_rows ? tokens / tp : tokens) * static_cast<double>(a.moe.experts_per_token) * w.expert_parallel.slices();
    moe_mlp = rows * (2.0 * hidden + 3.0 * static_cast<double>(s.expert_ffn));
  }
  // The larger of the FFN kinds the range's layers run.
  const bool any_dense = a.moe.moe_count(range) < range.count;
  const double mlp = a.moe.enabled() ? std::max(any_dense ? dense_mlp : 0.0, moe_mlp) : dense_mlp;
  // Context parallelism's buffers that live only while the attention runs (PyTorch's: the gathered K/V and the
  // backward's accumulators), of K/V as SDPA receives them.
  const bool repeated = w.implementation.repeat_kv && s.q_heads > s.kv_heads;
  const double cp_transient =
      context_parallel_attention_transient_bytes(w.context_parallel, tokens, static_cast<double>(s.q_heads),
                                                 static_cast<double>(repeated ? s.q_heads : s.kv_heads), hd);
  if (cp_transient > 0)
    return std::max(attention * kBf16Bytes + cp_transient, mlp * kBf16Bytes) + residual * kBf16Bytes;
  return (residual + std::max(attention, mlp)) * kBf16Bytes;
}

// The TP mode's buffers (async TP's symmetric ones, DTP's partials in flight) and context parallelism's.
double mode_buffer_bytes(const ArchSpec& a, const Workload& w, const Variant& v, const TpShard& s) {
  const double hidden = static_cast<double>(a.hidden), hd = static_cast<double>(a.head_dim);
  const double tokens = pass_tokens(w);
  double bytes = 0;
  if (v.mode == TpMode::kAsync && w.implementation.async_tp != AsyncTpKernel::kSymmMem) {
    bytes = 2.0 * tokens * hidden * kBf16Bytes;  // the all-gather's and the reduce-scatter's buffers
  } else if (v.mode == TpMode::kDtp) {
    bytes = static_cast<double>(v.delta + 1) * tokens * hidden * kBf16Bytes;  // partials in flight
  }
  return bytes + context_parallel_buffer_bytes(w.context_parallel, tokens, static_cast<double>(s.q_heads),
                                               static_cast<double>(s.kv_heads), hd);
}

// The parameters of the range's MoE layers' experts on this rank.
double expert_parameters_of(const ArchSpec& a, const TpShard& s, const LayerRange& range) {
  double experts = 0;
  for (int64_t layer = range.first; layer < range.first + range.count; ++layer) {
    experts += expert_parameters_at(a, s, layer);
  }
  return experts;
}

// The bytes of `params` gathered parameters, `fp8` of them linears' weights gathered in e4m3 (fsdp.fp8_all_gather:
// torchao's fsdp_post_all_gather wraps the gathered bytes as the unsharded weight, no bf16 copy beside it), the rest
// bf16.
double gathered_bytes(double params, double fp8) {
  return kBf16Bytes * (params - fp8) + kFp8Bytes * fp8;
}

// FSDP2 holds a 1/dp shard of the fp32 master weights, gradients and moments; bf16 (fp8_all_gather: the linears' fp8)
// parameters only while gathered: the largest unit twice (one prefetched) when units reshard after their forward,
// every unit from its forward to its backward when they do not; and one unit's whole gradient before its
// reduce-scatter.
void fsdp_state(const ArchSpec& a, const Workload& w, const TpShard& s, const LayerRange& range, int tp, double params,
                MemoryFootprint& m) {
  const DataParallel& dp = w.data_parallel;
  const double largest_layer = w.layers > 0 ? largest_layer_parameters(a, s, range) : 0.0;
  const double unit = std::max({largest_layer, end_parameters_per_rank(a, tp, w.embedding, false),
                                end_parameters_per_rank(a, tp, false, w.head)});
  // The linears' weights, gathered fp8 (the loader allows it for dense models only: every layer of one kind).
  const bool fp8_layers = dp.fp8_all_gather && w.layers > 0;
  const double layer_fp8 = fp8_layers ? linear_parameters_per_layer(a, s, a.kind(range.first)) : 0.0;
  const double fp8 = fp8_layers ? linear_parameters_of_layers(a, s, range) : 0.0;
  // The embedding and the head (bf16) or a layer, whichever gathers the most bytes.
  const double unit_bytes = std::max({gathered_bytes(largest_layer, layer_fp8),
                                      kBf16Bytes * end_parameters_per_rank(a, tp, w.embedding, false),
                                      kBf16Bytes * end_parameters_per_rank(a, tp, false, w.head)});
  const double shards = dp.shards();
  // An MoE model's experts are sharded over their expert-data-parallel group (0 experts: params / shards).
  const double experts = expert_parameters_of(a, s, range);
  const int expert_dp = expert_data_group(dp, w.expert_parallel.degree * w.expert_parallel.slices(), tp).degree;
  const double sharded = experts > 0 ? (params - experts) / shards + experts / expert_dp : params / shards;
  m.weights_bytes = dp.reshard_after_forward ? 2.0 * unit_bytes : gathered_bytes(params, fp8);
  m.gradient_bytes = kGradientBytesPerParameter * sharded + dp.reduce_bytes * unit;
  m.optimizer_bytes = kAdamWStateBytesPerParameter * sharded;
}

// Mixed-precision AdamW state for every parameter (sharded under FSDP or the distributed optimizer), and what one
// micro-batch saves for its backward.
void add_training_state(const ArchSpec& a, const Workload& w, const TpShard& s, const LayerRange& range, int tp,
                        const SavedActivations& saved, MemoryFootprint& m) {
  const double params = layer_parameters_per_rank(a, s, range) + end_parameters_per_rank(a, tp, w.embedding, w.head);
  m.gradient_bytes = kGradientBytesPerParameter * params;
  m.optimizer_bytes = kAdamWStateBytesPerParameter * params;
  const DataParallel& dp = w.data_parallel;
  if (dp.enabled() && dp.fsdp) fsdp_state(a, w, s, range, tp, params, m);
  if (dp.enabled() && dp.distributed_optimizer) {
    const double experts = expert_parameters_of(a, s, range);
    const int expert_gpus = w.expert_parallel.degree * w.expert_parallel.slices();
    distributed_optimizer_state(dp, params, experts, expert_data_group(dp, expert_gpus, tp).degree, m);
  }
  // Beside what the forward saved: the live block with one layer's recomputation (held while that layer's backward
  // runs), or the eager loss's gradients at the start of the backward where they are larger (before any layer
  // recomputes; the forward's live tensors are gone by then).
  m.activation_bytes =
      saved.forward_bytes + std::max(m.activation_bytes + saved.recompute_bytes, loss_transient_bytes(a, w, tp));
}

}  // namespace

double symmetric_workspace_bytes(const ArchSpec& a, const Workload& w, const Variant& v, int tp) {
  if (v.mode != TpMode::kAsync || w.implementation.async_tp != AsyncTpKernel::kSymmMem) return 0.0;
  return 2.0 * pass_tokens(w) / tp * static_cast<double>(a.hidden) * kBf16Bytes;
}

MemoryFootprint memory_footprint(const ArchSpec& a, const Workload& w, const Variant& v, int tp,
                                 const SavedActivations& saved) {
  const TpShard s = shard_for_tp(a, tp, w.expert_parallel.degree, w.expert_parallel.tensor_degree);
  const LayerRange range{w.first_layer, w.layers};
  MemoryFootprint m;
  m.weights_bytes = weight_bytes(a, w, s, range, tp);
  if (w.phase == Phase::kDecode || w.phase == Phase::kGenerate) m.kv_cache_bytes = kv_cache_bytes(a, w, s, range);
  m.activation_bytes = live_block_bytes(a, w, v, s, range, tp);
  m.buffer_bytes = mode_buffer_bytes(a, w, v, s);
  m.symmetric_memory_bytes = symmetric_workspace_bytes(a, w, v, tp);
  if (w.phase == Phase::kTrain) add_training_state(a, w, s, range, tp, saved, m);
  return m;
}

MemoryFootprint memory_footprint(const ArchSpec& a, const Workload& w, const Variant& v, int tp) {
  return memory_footprint(a, w, v, tp,
                          w.phase == Phase::kTrain ? training_saved_activations(a, w, v, tp) : SavedActivations{});
}

SavedActivations training_saved_activations(const ArchSpec& a, const Workload& w, const Variant& v, int tp) {
  Workload one = w;
  one.microbatches = 1;
  one.optimizer = false;
  one.data_parallel = DataParallel{};  // its gathered parameters are counted as weights, not as activations
  // Remembered per process by every input (a plan's candidates that differ in what `one` resets share it): the same
  // inputs build the same graph.
  struct Known {
    ArchSpec arch;
    Workload workload;
    Variant variant;
    int tp;
    SavedActivations saved;
  };
  static std::vector<Known> known;
  for (const Known& k : known) {
    if (k.tp == tp && k.workload == one && k.variant == v && k.arch == a) return k.saved;
  }
  const SavedActivations saved =
      saved_activations(build_layer_graph(a, one, tp, v), w.implementation.saved_gemm_inputs);
  if (known.size() < kMaxKnownSavedActivations) known.push_back(Known{a, std::move(one), v, tp, saved});
  return saved;
}

double accumulated_unsharded_gradient_bytes(const ArchSpec& a, const Workload& w, int tp) {
  const DataParallel& dp = w.data_parallel;
  if (!dp.enabled() || !dp.fsdp || w.phase != Phase::kTrain) return 0.0;
  const TpShard s = shard_for_tp(a, tp, w.expert_parallel.degree, w.expert_parallel.tensor_degree);
  const double params = layer_parameters_per_rank(a, s, LayerRange{w.first_layer, w.layers}) +
                        end_parameters_per_rank(a, tp, w.embedding, w.head);
  return dp.reduce_bytes * params;
}

Workload whole_model_workload(const ArchSpec& arch, const Workload& workload) {
  Workload w = workload;
  w.layers = arch.layers;
  w.first_layer = 0;
  return w;
}

}  // namespace tpsim::model
