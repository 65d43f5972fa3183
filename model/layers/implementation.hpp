// How a framework runs the layer (a scenario's `implementation:` block): the attention kernel, fused or
// separate projections, RoPE and repeat_kv kernels, and the layout copies around sequence-parallel
// collectives. Unset, the layer is the idealised one (fused projections, the profile's attention kernel,
// no extra copies); named presets (torchtitan-2024, torchtitan-2025, megatron-te, vllm, gpt-fast) fill the same keys.
#pragma once

#include <string>
#include <vector>

#include "base/enum_names.hpp"
#include "model/layers/fp8_recipe.hpp"

namespace tpsim::model {

// The attention kernel whose efficiencies apply: the profile's own (`attention.efficiency`), or one the
// profile lists under `attention.kernels`.
enum class AttentionKernel { kProfile, kFa2, kFa3, kCudnn };
inline constexpr EnumName<AttentionKernel> kAttentionKernelNames[] = {
    {AttentionKernel::kProfile, "profile"},
    {AttentionKernel::kFa2, "fa2"},
    {AttentionKernel::kFa3, "fa3"},
    {AttentionKernel::kCudnn, "cudnn"},
};

// RoPE as one fused kernel over the rotated columns (bf16 in and out), or as PyTorch's complex-number
// code left unfused: a cast to fp32, the complex product in fp32, the cast back (three kernels).
enum class RopeKernel { kFused, kFp32Unfused };
inline constexpr EnumName<RopeKernel> kRopeKernelNames[] = {
    {RopeKernel::kFused, "fused"},
    {RopeKernel::kFp32Unfused, "fp32_unfused"},
};

// How an async-TP variant's AG+GEMM and GEMM+RS run: tpsim's idealised chunked pipeline (a GEMM kernel per
// chunk); PyTorch's symmetric-memory fused ops (torch/distributed/_symmetric_memory: fused_all_gather_matmul
// and fused_matmul_reduce_scatter, one GEMM piece per rank's shard on two alternating streams); or one
// tile-fused GEMM kernel per linear whose tiles wait for their rows' signal (Flux, TileLink: the chunks'
// transfers as the pipeline's, no per-chunk kernel); or Transformer Engine's userbuffers comm-GEMM overlap as
// the H100 fp8 recipes configure it (model/parallel/userbuffers.hpp: ring exchanges forward and for the
// row-parallel data gradients, bulk overlaps in the column-parallel backward).
enum class AsyncTpKernel { kPipeline, kSymmMem, kTileFused, kUserbuffers };
inline constexpr EnumName<AsyncTpKernel> kAsyncTpKernelNames[] = {
    {AsyncTpKernel::kPipeline, "pipeline"},
    {AsyncTpKernel::kSymmMem, "symm_mem"},
    {AsyncTpKernel::kTileFused, "tile_fused"},
    {AsyncTpKernel::kUserbuffers, "userbuffers"},
};

// The SMs Transformer Engine's bulk userbuffers kernels hold (their num_sm) in a column-parallel linear's
// backward: the all-gather of the saved rows beside the data gradient (qkv_dgrad, fc1_dgrad) and the
// reduce-scatter of the data gradient beside the weight gradient (qkv_wgrad, fc1_wgrad). TE's default is 16
// each (transformer_engine/pytorch/module/base.py initialize_ub, get_default_config); recipes set their own.
struct UserbufferSms {
  int qkv_dgrad = 16;
  int qkv_wgrad = 16;
  int fc1_dgrad = 16;
  int fc1_wgrad = 16;
  bool operator==(const UserbufferSms&) const = default;  // every field (a memo's key)
};

// How the embedding, LM head and loss run: as the variant runs its layers (vocab-parallel, on the
// variant's collectives); outside the compiled blocks on sequence parallelism's blocking NCCL
// collectives under every variant (an async variant pipelines only its layers' linears); or replicated,
// every rank holding the whole embedding and LM head and communicating nothing for them (gpt-fast shards
// only the layers' linears).
enum class ModelEndsMode { kVariant, kNccl, kReplicated };
inline constexpr EnumName<ModelEndsMode> kModelEndsNames[] = {
    {ModelEndsMode::kVariant, "variant"},
    {ModelEndsMode::kNccl, "nccl"},
    {ModelEndsMode::kReplicated, "replicated"},
};

// When a column-parallel linear's input gradient is reduced (all-reduce, or reduce-scatter under sp):
// issued right after its data-gradient GEMM, the weight-gradient GEMM running beside it (Megatron's
// async grad-input reduction); or as PyTorch's autograd orders a Linear's backward under DTensor, after
// both gradients (and every part's, where the linear runs as separate GEMMs), nothing left beside it.
// PyTorch's micro-pipeline pass fuses a reduce-scatter only with the one matmul producing it: the summed
// input gradient of separate GEMMs runs as a plain NCCL reduce-scatter under `async_tp: symm_mem` too.
enum class BackwardOrder { kOverlapped, kAutograd };
inline constexpr EnumName<BackwardOrder> kBackwardOrderNames[] = {
    {BackwardOrder::kOverlapped, "overlapped"},
    {BackwardOrder::kAutograd, "autograd"},
};

// Whether a residual add and the RMSNorm reading its sum run as one kernel (the add writes the stream, the
// norm continues in the same kernel from its registers and writes its output; in the backward the norm's
// backward and the add of the skip connection's gradient likewise): two kernels each (eager PyTorch,
// Megatron's own kernels); fused within a layer (torch.compile per TransformerBlock: the add closing the
// attention and the FFN's norm, and the backward's pairs, fuse; the add closing a block and the next block's
// first norm are in two compiled graphs); or fused everywhere (a whole-model compile, or vLLM's
// fused_add_rms_norm, which also takes the add closing each layer into the next layer's or the final norm).
enum class AddNormKernel { kSeparate, kFusedInLayer, kFused };
inline constexpr EnumName<AddNormKernel> kAddNormKernelNames[] = {
    {AddNormKernel::kSeparate, "separate"},
    {AddNormKernel::kFusedInLayer, "fused_in_layer"},
    {AddNormKernel::kFused, "fused"},
};

// How an RMSNorm runs: one kernel (a compiled graph's, or a framework's fused kernel); PyTorch eager's kernels of
// Llama's RMSNorm as TorchTitan writes it (`_norm(x.float()).type_as(x) * weight`: an upcast, pow, mean, the
// eps add, rsqrt, the scaling, the downcast and the weight's product, and autograd's kernels for each in the
// backward) everywhere; or eager for the final norm only (blocks compiled one by one leave the norm before the LM
// head to eager PyTorch).
enum class NormKernel { kFused, kEagerFinal, kEager };
inline constexpr EnumName<NormKernel> kNormKernelNames[] = {
    {NormKernel::kFused, "fused"},
    {NormKernel::kEagerFinal, "eager_final"},
    {NormKernel::kEager, "eager"},
};

// How the loss runs over the logits: fused (a compiled or framework kernel reading the bf16 logits, its fp32
// softmax kept for the backward: tpsim's idealised loss), or PyTorch eager's F.cross_entropy over
// `logits.float()`: the fp32 upcast, log_softmax and nll_loss, and in the backward nll_loss's zero-filled
// gradient, log_softmax's backward and the downcast (eager_kernels.hpp).
enum class LossKernel { kFused, kFp32Eager };
inline constexpr EnumName<LossKernel> kLossKernelNames[] = {
    {LossKernel::kFused, "fused"},
    {LossKernel::kFp32Eager, "fp32_eager"},
};

// What a linear keeps for its weight gradient. kAsRead: the input its GEMM read, as autograd saves it (PyTorch's
// nn.Linear under DTensor: the gathered input under sequence parallelism; torchao's float8 linears save the bf16
// input and cast it again in the backward). kTransformerEngine: what Transformer Engine's Linear and LayerNormLinear
// keep (transformer_engine/pytorch/module/linear.py _Linear.forward: `saved_inputmat = inputmat`, the rank's own rows
// before gather_along_first_dim, cast to fp8 first under an fp8 recipe; layernorm_linear.py frees the gathered
// ln_out_total after the GEMM and keeps the local ln_out): under sequence parallelism the rank's rows, all-gathered
// again in the backward (_Linear.backward: gather_along_first_dim(inputmat, async_op=True) before the data-gradient
// GEMM, waited on before the weight gradient's), and under fp8 a one-byte copy of each input an fp8 GEMM reads
// (beside the bf16 tensor where another backward reads that too: the attention output).
enum class SavedGemmInputs { kAsRead, kTransformerEngine };
inline constexpr EnumName<SavedGemmInputs> kSavedGemmInputsNames[] = {
    {SavedGemmInputs::kAsRead, "as_read"},
    {SavedGemmInputs::kTransformerEngine, "transformer_engine"},
};

// SwiGLU as one kernel (a compiled graph's, Megatron's fused bias_swiglu), or as eager PyTorch runs
// `F.silu(w1(x)) * w3(x)`: silu, then the product; in the backward the product's two gradients and silu_backward.
enum class SwigluKernel { kFused, kEager };
inline constexpr EnumName<SwigluKernel> kSwigluKernelNames[] = {
    {SwigluKernel::kFused, "fused"},
    {SwigluKernel::kEager, "eager"},
};

struct Implementation {
  std::string name;  // the preset's, or "custom" with keys of its own; empty: unset (the idealised layer)
  AttentionKernel attention = AttentionKernel::kProfile;
  bool separate_qkv = false;      // q, k and v projections as three GEMMs over the one gathered input
  bool separate_gate_up = false;  // gate and up projections as two GEMMs
  RopeKernel rope = RopeKernel::kFused;
  bool repeat_kv = false;  // K and V copied out to every query head before attention (grouped-query models)
  // Sequence-parallel all-gathers and reduce-scatters on the sequence dimension of [batch, seq, hidden]:
  // a full-tensor layout copy after each all-gather and before each reduce-scatter (pytorch/torchtitan#437).
  // Fused async-TP ops avoid them.
  bool sp_layout_copies = false;
  AsyncTpKernel async_tp = AsyncTpKernel::kPipeline;
  UserbufferSms userbuffer_sms{};  // async_tp userbuffers: its bulk kernels' SMs
  ModelEndsMode model_ends = ModelEndsMode::kVariant;
  BackwardOrder backward_order = BackwardOrder::kOverlapped;
  // Under an fp8 tensorwise recipe, torchao's float8 TP plan (Float8ColwiseParallel, Float8RowwiseParallel,
  // PrepareFloat8ModuleInput): each sharded input is cast to e4m3 before its sequence-parallel all-gather
  // (the row-parallel output gradient to e5m2 before the backward's), so the gather, its layout copy and
  // the saved gathered input are fp8; the GEMMs read them without casting again. Reduce-scatters stay bf16.
  // Ignored under other recipes (TorchTitan runs rowwise over plain TP, gathering bf16).
  bool fp8_all_gather = false;
  AddNormKernel add_norm = AddNormKernel::kSeparate;
  NormKernel norm = NormKernel::kFused;
  LossKernel loss = LossKernel::kFused;
  SwigluKernel swiglu = SwigluKernel::kFused;
  SavedGemmInputs saved_gemm_inputs = SavedGemmInputs::kAsRead;
  // Whose fp8 quantisation kernels run around the linears under an fp8 recipe (fp8_recipe.hpp).
  Fp8Kernels fp8_kernels = Fp8Kernels::kTorchao;
  // fp32 parameters under torch.autocast (bf16): every linear's GEMM casts its fp32 weight to bf16 in each
  // forward (autocast's cache holds the cast for the backward) and autograd casts its bf16 weight gradient back
  // to fp32 (ToCopyBackward0). Frameworks that keep bf16 parameters beside fp32 master weights (FSDP2's
  // MixedPrecisionPolicy, Megatron's distributed optimizer) cast nothing per GEMM.
  bool autocast = false;
  // Whether the layers run compiled (torch.compile's graph saves for the backward only what it reads). false: eager
  // blocks under torch.utils.checkpoint's selective policy, whose caching mode holds the output of every op the
  // policy keeps until its layer's recomputation replays it, read by the backward or not (_CachingTorchDispatchMode).
  // The eager kernels themselves are the add_norm, rms_norm, swiglu and loss keys'.
  bool compiled = true;
  // A serving framework's host time per decode step (its scheduler, sampling and output processing between two
  // steps), and whether its scheduler runs a step ahead, so that the host's time hides behind the GPU's step
  // unless it is longer (serving_host_seconds).
  double step_host_s = 0;
  bool overlap_scheduler = false;

  bool is_set() const { return !name.empty(); }

  bool operator==(const Implementation&) const = default;  // every field (a memo's key)
};

// The preset names, and the preset of `name` (throws InputError listing the valid ones).
const std::vector<std::string>& implementation_presets();
Implementation implementation_preset(const std::string& name);
// The values of implementation.attention, async_tp, backward_order, add_norm, rms_norm, loss, swiglu and
// saved_gemm_inputs, from the tables beside their enums (the scenario reads them through the same tables).
std::string to_string(AttentionKernel kernel);
std::string to_string(AsyncTpKernel kernel);
std::string to_string(BackwardOrder order);
std::string to_string(AddNormKernel kernel);
std::string to_string(NormKernel kernel);
std::string to_string(LossKernel kernel);
std::string to_string(SwigluKernel kernel);
std::string to_string(SavedGemmInputs inputs);
// One line per key, for reports: "attention fa2, qkv separate, ..."
std::string describe(const Implementation& implementation);
// The host time a decode step of `gpu_step_s` on the GPU adds to the time per output token: the framework's
// step_host_s, or only what of it the GPU's step does not hide under an overlap scheduler.
double serving_host_seconds(const Implementation& implementation, double gpu_step_s);

}  // namespace tpsim::model
