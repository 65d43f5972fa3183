// Implementation presets, each choice with the framework code or issue it comes from.
#include "model/layers/implementation.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "base/names.hpp"
#include "base/units.hpp"

namespace tpsim::model {
namespace {

// TorchTitan's Llama of 2024 (torchtitan/models/llama/model.py, the async-TP post's runs): wq, wk, wv
// and w1, w3 as separate nn.Linear modules; apply_rotary_emb through torch.view_as_complex in fp32,
// which Inductor left to eager kernels; repeat_kv expanding K and V; F.scaled_dot_product_attention,
// whose flash backend is the FlashAttention-2 port; sequence parallelism on dim 1 of [bs, seqlen,
// dim] (Shard(1)), whose all-gathers and reduce-scatters copy the whole tensor (pytorch/torchtitan
// #437); torch.compile's micro-pipeline TP over the symmetric-memory ops; compiled per
// TransformerBlock, so the embedding, LM head and loss run eagerly on NCCL; autograd's order in the
// backward (a Linear's input gradient redistributed after its weight gradient,
// torch/distributed/tensor/parallel/style.py's ColwiseParallel and PrepareModuleInput; the
// micro-pipeline pass, torch/_inductor/fx_passes/micro_pipeline_tp.py _find_producer_matmul, fuses a
// reduce-scatter only with the mm producing it, not with the sum of the q, k, v or w1, w3 gradients); under
// float8 tensorwise, torchao's float8 TP plan (torchao/float8/float8_tensor_parallel.py, chosen by
// parallelize_llama.py's enable_float8_tensorwise_tp at torchtitan 820504e; the 2024 runs were bf16); Inductor
// fusing each block's residual add with the RMSNorm after it (the traced layer's "residual add + RMSNorm (fused
// Triton)" kernel; the add closing a block and the next block's attention_norm are in two compiled graphs).
// Outside the compiled blocks, eager PyTorch: the final norm (torchtitan/models/norms.py RMSNorm, `_norm(x.float())
// .type_as(x) * self.weight`, norm_type "rmsnorm" in train_configs/llama3_*.toml) and the loss, train.py's
// `cross_entropy(pred.flatten(0, 1).float(), ...)`, left uncompiled ("compiling loss function causes CUDA errors,
// turning off for now", torchtitan 3f20451, December 2024). Parameters are FSDP2's bf16 copies (apply_fsdp's
// MixedPrecisionPolicy); no autocast (TorchTitan added AMP for single-device and DDP runs only in June 2025,
// 0b44d4c).
Implementation torchtitan_2024() {
  return {.name = "torchtitan-2024",
          .attention = AttentionKernel::kFa2,
          .separate_qkv = true,
          .separate_gate_up = true,
          .rope = RopeKernel::kFp32Unfused,
          .repeat_kv = true,
          .sp_layout_copies = true,
          .async_tp = AsyncTpKernel::kSymmMem,
          .model_ends = ModelEndsMode::kNccl,
          .backward_order = BackwardOrder::kAutograd,
          .fp8_all_gather = true,
          .add_norm = AddNormKernel::kFusedInLayer,
          .norm = NormKernel::kEagerFinal,
          .loss = LossKernel::kFp32Eager};
}

// TorchTitan at 820504e (June 2025): as in 2024, but the loss compiled with the model
// (torchtitan/components/loss.py build_cross_entropy_loss: torch.compile(cross_entropy_loss) under
// training.compile), Inductor fusing the upcast into its softmax kernels.
Implementation torchtitan_2025() {
  Implementation i = torchtitan_2024();
  i.name = "torchtitan-2025";
  i.loss = LossKernel::kFused;
  return i;
}

// Each preset with the framework code it follows.
const std::vector<Implementation>& presets() {
  static const std::vector<Implementation> all = {
      torchtitan_2024(),
      // TorchTitan's Llama 3 of June 2025 (torchtitan 820504e, the commit of its async-TP benchmark of that
      // month; torchtitan/models/llama3/model.py and parallelize_llama.py) makes the same choices: separate
      // wq/wk/wv and w1/w3, apply_rotary_emb through view_as_complex in fp32, repeat_kv by expand + reshape,
      // SDPA restricted to its flash, efficient and math backends, Shard(1) sequence parallelism, blocks
      // compiled one by one with the embedding, final norm and output left eager. PyTorch's fused ops of
      // that time (torch 2.8 development) add barriers on entry to and exit from the reduce-scatter and skip
      // the local shard's copy into the gathered output when nothing reads it: neither is modelled apart (a
      // barrier is one copy-engine step latency, the copy one shard). Its loss is compiled (torchtitan_2025).
      torchtitan_2025(),
      // Megatron-Core with Transformer Engine: fused linear_qkv and linear_fc1 (gate and up in one GEMM),
      // TE's fused RoPE kernel, cuDNN fused attention with native grouped-query heads, activations laid
      // out [seq, batch, hidden] so sequence-parallel collectives run on dim 0 without copies; TE's Linear and
      // LayerNormLinear keep the rank's rows of their inputs (fp8 under an fp8 recipe) and gather them again in the
      // backward (SavedGemmInputs), as Megatron's own ColumnParallelLinear, the output layer, does
      // (megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication).
      // Under an async variant, TE's userbuffers comm-GEMM overlap (Megatron's tp_comm_overlap; async_tp userbuffers,
      // its bulk kernels at TE's default SMs until a recipe sets userbuffer_sms) for the layers' linears, and
      // Megatron's own embedding and output layer (not TE modules) on NCCL's blocking sequence-parallel collectives.
      // Under fp8, TE's quantisation kernels (fp8_recipe.hpp), its fp8 weights cached across micro-batches.
      {.name = "megatron-te",
       .attention = AttentionKernel::kCudnn,
       .async_tp = AsyncTpKernel::kUserbuffers,
       .model_ends = ModelEndsMode::kNccl,
       .saved_gemm_inputs = SavedGemmInputs::kTransformerEngine,
       .fp8_kernels = Fp8Kernels::kTransformerEngine},
      // vLLM from v0.7.0: QKVParallelLinear and MergedColumnParallelLinear (fused), its rotary-embedding CUDA
      // kernel, and FlashAttention-3 on Hopper (vllm-flash-attn, the default on SM 9.0 since vllm-project/vllm#12093,
      // released in v0.7.0) with native grouped-query heads; its RMSNorm takes the residual
      // (vllm/model_executor/models/llama.py: input_layernorm(hidden_states, residual)), running every residual add
      // with the norm after it as one fused_add_rms_norm kernel, the final norm's too. Its V1 engine's host time
      // per step is not given (0): it depends on the batch and the version (5-6 ms of gap at batch 256 before
      // asynchronous scheduling, 0.15-0.17 ms with it: vllm-project/vllm#10634 and #11133); set
      // implementation.step_host_us (and overlap_scheduler under --async-scheduling) for a run that has it.
      {.name = "vllm", .attention = AttentionKernel::kFa3, .add_norm = AddNormKernel::kFused},
      // vLLM before v0.7.0 (the V0 engine): the same kernels with FlashAttention-2 on Hopper, and a synchronous
      // step: the GPU idles about 4 ms per decode step while the host transfers the sampled tokens, pythonizes the
      // outputs, prepares the next step's inputs and schedules (vllm-project/vllm#6854, July 2024: "5-13ms of GPU
      // bubble", about 4 ms per step in its traces).
      {.name = "vllm-0.6", .attention = AttentionKernel::kFa2, .add_norm = AddNormKernel::kFused, .step_host_s = 4e-3},
      // SGLang from v0.4: its zero-overhead batch scheduler runs one batch ahead and prepares the next batch's
      // metadata while the GPU runs (lmsys.org blog 2024-12-04, "SGLang v0.4": no idle time on the GPU over
      // consecutive decode batches in Nsight); FlashAttention-3 on Hopper, fused projections and add + norm as
      // vLLM's (its Llama code shares vLLM's layer structure).
      {.name = "sglang",
       .attention = AttentionKernel::kFa3,
       .add_norm = AddNormKernel::kFused,
       .overlap_scheduler = true},
      // gpt-fast (pytorch-labs/gpt-fast model.py): a fused wqkv projection, separate w1 and w3; RoPE in
      // fp32 real arithmetic that Inductor fuses; k and v repeat_interleave'd to every query head; SDPA.
      // Its tp.py shards the layers' linears only: the embedding and the output layer stay whole on every
      // rank. generate.py compiles the whole decode step (torch.compile of decode_one_token), so Inductor
      // fuses every residual add with the RMSNorm after it, across layers too.
      {.name = "gpt-fast",
       .attention = AttentionKernel::kFa2,
       .separate_gate_up = true,
       .repeat_kv = true,
       .model_ends = ModelEndsMode::kReplicated,
       .backward_order = BackwardOrder::kAutograd,
       .add_norm = AddNormKernel::kFused}};
  return all;
}

}  // namespace

const std::vector<std::string>& implementation_presets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Implementation& i : presets()) out.push_back(i.name);
    return out;
  }();
  return names;
}

Implementation implementation_preset(const std::string& name) {
  for (const Implementation& i : presets()) {
    if (i.name == name) return i;
  }
  throw InputError("unknown implementation preset '" + name + "'; valid: " + join_names(implementation_presets()));
}

std::string to_string(AttentionKernel kernel) {
  return std::string(name_of(kAttentionKernelNames, kernel));
}

std::string to_string(AsyncTpKernel kernel) {
  return std::string(name_of(kAsyncTpKernelNames, kernel));
}

std::string to_string(BackwardOrder order) {
  return std::string(name_of(kBackwardOrderNames, order));
}

std::string to_string(AddNormKernel kernel) {
  return std::string(name_of(kAddNormKernelNames, kernel));
}

std::string to_string(NormKernel kernel) {
  return std::string(name_of(kNormKernelNames, kernel));
}

std::string to_string(LossKernel kernel) {
  return std::string(name_of(kLossKernelNames, kernel));
}

std::string to_string(SwigluKernel kernel) {
  return std::string(name_of(kSwigluKernelNames, kernel));
}

std::string to_string(SavedGemmInputs inputs) {
  return std::string(name_of(kSavedGemmInputsNames, inputs));
}

double serving_host_seconds(const Implementation& i, double gpu_step_s) {
  return i.overlap_scheduler ? std::max(0.0, i.step_host_s - gpu_step_s) : i.step_host_s;
}

namespace {

// The bulk kernels' SMs of async_tp userbuffers, for describe().
std::string userbuffer_text(const Implementation& i) {
  if (i.async_tp != AsyncTpKernel::kUserbuffers) return "";
  const UserbufferSms& s = i.userbuffer_sms;
  return " (bulk SMs qkv " + std::to_string(s.qkv_dgrad) + "/" + std::to_string(s.qkv_wgrad) + ", fc1 " +
         std::to_string(s.fc1_dgrad) + "/" + std::to_string(s.fc1_wgrad) + ")";
}

}  // namespace

std::string describe(const Implementation& i) {
  if (!i.is_set()) return "idealised (fused projections, the profile's attention kernel, no layout copies)";
  return i.name + ": attention " + to_string(i.attention) + ", qkv " + (i.separate_qkv ? "separate" : "fused") +
         ", gate_up " + (i.separate_gate_up ? "separate" : "fused") + ", rope " +
         (i.rope == RopeKernel::kFp32Unfused ? "fp32 unfused" : "fused") + ", repeat_kv " +
         (i.repeat_kv ? "materialised" : "no") + ", sp layout copies " + (i.sp_layout_copies ? "yes" : "no") +
         ", async tp " + to_string(i.async_tp) + userbuffer_text(i) + ", model ends " +
         (i.model_ends == ModelEndsMode::kNccl         ? "on nccl"
          : i.model_ends == ModelEndsMode::kReplicated ? "replicated"
                                                       : "on the variant's collectives") +
         ", backward " + to_string(i.backward_order) + ", add + norm " + to_string(i.add_norm) + ", rms_norm " +
         to_string(i.norm) + ", loss " + to_string(i.loss) + ", swiglu " + to_string(i.swiglu) +
         (i.saved_gemm_inputs == SavedGemmInputs::kTransformerEngine ? ", saved gemm inputs as transformer engine"
                                                                     : "") +
         (i.autocast ? ", autocast (fp32 parameters)" : "") + (i.compiled ? "" : ", eager blocks") +
         (i.fp8_all_gather ? ", fp8 all-gathers (tensorwise)" : "") +
         (i.fp8_kernels == Fp8Kernels::kTorchao ? "" : ", fp8 kernels " + to_string(i.fp8_kernels)) +
         (i.step_host_s > 0 ? ", host " + format_number("%.3g", i.step_host_s * 1e3) + " ms per decode step" : "") +
         (i.overlap_scheduler ? ", overlap scheduler" : "");
}

}  // namespace tpsim::model
