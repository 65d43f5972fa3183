// What one step processes: phase, batch, sequence lengths, dtype, layers, and how kernels are launched.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/enum_names.hpp"
#include "model/graph/op_list.hpp"
#include "model/layers/dtype.hpp"
#include "model/layers/fp8_recipe.hpp"
#include "model/layers/implementation.hpp"
#include "model/moe/expert_parallel.hpp"
#include "model/parallel/context_parallel.hpp"
#include "model/train/ddp_fsdp.hpp"

namespace tpsim::model {

// forward: a training forward pass; prefill: an inference prompt pass (batch x seq_len tokens);
// decode: one new token per sequence over a KV cache of context_len; generate: a prefill of
// context_len prompt tokens, then gen_len decode steps.
// ops: a custom op list (op_list.hpp) instead of a model's layers.
// train: one training step of the TP group (train_step.hpp): forward and backward per micro-batch,
// then the optimizer.
enum class Phase { kForward, kPrefill, kDecode, kGenerate, kOps, kTrain };
// workload.phase, in the order its message lists them.
inline constexpr EnumName<Phase> kPhaseNames[] = {
    {Phase::kForward, "forward"}, {Phase::kPrefill, "prefill"},   {Phase::kTrain, "train"},
    {Phase::kDecode, "decode"},   {Phase::kGenerate, "generate"}, {Phase::kOps, "ops"},
};
// What a training step keeps for the backward: every saved activation (none); only each layer's
// input, the layer's forward re-run before its backward (full); or what a save list names, the
// layer's other outputs that its backward reads recomputed before it (selective).
enum class Recompute { kNone, kFull, kSelective };
inline constexpr EnumName<Recompute> kRecomputeNames[] = {
    {Recompute::kNone, "none"},
    {Recompute::kFull, "full"},
    {Recompute::kSelective, "selective"},
};

// Selective recomputation's save list: the forward outputs kept in memory. The default is TorchTitan's
// op-level list (torchtitan's llama3 parallelize.py, _save_list and _custom_policy): every other matmul
// output (the 1st, 3rd, ... of each layer), attention outputs and reduce-scatter outputs.
struct SaveList {
  bool matmul = false;             // every matmul output
  bool every_other_matmul = true;  // the odd-numbered matmuls of each layer, counted from 1
  bool attention = true;
  bool reduce_scatter = true;
  bool all_reduce = false;
  bool all_gather = false;
  bool all_to_all = false;                           // an MoE layer's dispatch and combine outputs
  bool operator==(const SaveList&) const = default;  // every field (a memo's key)
};

struct Workload {
  Phase phase = Phase::kForward;
  int64_t batch = 1;        // sequences
  int64_t seq_len = 1;      // forward / prefill: tokens per sequence
  int64_t context_len = 0;  // decode: KV-cache length; generate: prompt length
  int64_t gen_len = 0;      // generate: new tokens per sequence
  Dtype dtype = Dtype::kBf16;
  // The attention kernel's Q, K, V (and KV cache): fp8 runs FlashAttention-3's e4m3 path at the fp8
  // peak and halves the K/V bytes it reads; its output stays bf16.
  Dtype attention_dtype = Dtype::kBf16;
  int64_t layers = 0;        // decoder layers to simulate (resolved from "all")
  int64_t first_layer = 0;   // the model's number of the first of them (a later pipeline chunk's: above 0)
  bool cuda_graphs = false;  // kernels replayed from a captured graph: no per-kernel host launch
  // The fp8 weight copies cast by an earlier micro-batch of the step (a pipeline stage's pass programs), under
  // quantisation kernels that cache them (fp8_recipe.hpp caches_fp8_weights).
  bool fp8_weights_cached = false;
  std::vector<OpSpec> ops;  // phase ops
  // train only: micro-batches of `batch` sequences each data-parallel replica accumulates into one step (per
  // replica: the step holds dp x microbatches x batch sequences), recomputation, and whether the step ends with
  // clipping and AdamW.
  int64_t microbatches = 1;
  // train: sequences per step over every replica when workload.global_batch gives it (microbatches derived from
  // it: global_batch / (dp x batch)); 0 when not given.
  int64_t global_batch = 0;
  Recompute recompute = Recompute::kNone;
  // recompute full only: how many layers of each program (a pipeline chunk's, or the whole model's) re-run their
  // forward, counted from its first (Megatron's recompute_method block with recompute_num_layers); the others keep
  // every activation. 0: every layer.
  int64_t recompute_layers = 0;
  SaveList save;  // recompute selective only
  // train with dtype fp8: the recipe whose quantisation kernels surround every linear's GEMMs.
  Fp8Recipe fp8_recipe = Fp8Recipe::kNone;
  bool optimizer = true;
  // train: the model's ends this program runs. A pipeline stage's chunk (pipeline_spec.hpp) has the embedding
  // only on the first stage and the final norm, LM head and loss only on the last; without them its input
  // arrives from the previous stage and its output's gradient from the next, once its forward has run.
  bool embedding = true;
  bool head = true;
  // train: the replicas this step's gradients are synchronised with (parallelism.dp), and how.
  DataParallel data_parallel;
  // train: each sequence split over parallelism.cp GPUs (model/parallel/context_parallel.hpp): a rank's passes run
  // seq_len / cp tokens per sequence (primary_pass), its attention the whole sequence's keys.
  ContextParallel context_parallel;
  // An MoE model's expert parallelism (parallelism.ep) and routing (the moe section).
  ExpertParallel expert_parallel;
  // forward only: the embedding before the layers, and the final norm, LM head and loss after them, as a
  // training forward runs them (phase train always has them).
  bool whole_model = false;
  // How the framework runs the layer (the scenario's implementation block); unset: the idealised layer.
  Implementation implementation;

  bool is_inference() const { return phase != Phase::kForward && phase != Phase::kTrain; }
  bool operator==(const Workload&) const = default;  // every field (a memo's key)
};

// One pass through the layers: each of `batch` sequences adds `new_tokens` after `cached_tokens`
// already in its KV cache.
struct Pass {
  int64_t batch = 1;
  int64_t new_tokens = 1;
  int64_t cached_tokens = 0;

  int64_t tokens() const { return batch * new_tokens; }
};

// forward / prefill: the whole sequence; decode: one token at context_len; generate: its prefill.
Pass primary_pass(const Workload& workload);
// Tokens of the passes a sequence-sharded variant cuts: a pass's tokens (a decode step has batch tokens).
int64_t sharded_tokens(const Workload& workload);
// Whether sequence-parallel all-gathers move fp8 (implementation.fp8_all_gather under a per-tensor fp8 recipe).
bool fp8_gathers(const Workload& workload);
// Decode step `step` (0-based) of a generate workload: one token after context_len + step tokens.
Pass decode_pass(const Workload& workload, int64_t step);

double dtype_bytes(Dtype dtype);
std::string to_string(Phase phase);
std::string to_string(Dtype dtype);
std::string to_string(Recompute recompute);
// workload.save's item names, each with the SaveList flag it sets, in SaveList's order.
const std::vector<std::pair<std::string, bool SaveList::*>>& save_list_items();
// The items `save` holds, as workload.save names them.
std::vector<std::string> save_items(const SaveList& save);

}  // namespace tpsim::model
