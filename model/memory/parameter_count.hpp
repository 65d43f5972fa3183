// Parameters one TP rank holds: a decoder layer's sharded linears, its replicated small tensors, and the
// vocab-parallel embedding and LM head.
#pragma once

#include "model/layers/arch_spec.hpp"

namespace tpsim::model {

// Mixed-precision AdamW per parameter (as Megatron and FSDP2 keep it): an fp32 gradient, and fp32 master
// weights with AdamW's two fp32 moments.
inline constexpr double kGradientBytesPerParameter = 4.0;
inline constexpr double kAdamWStateBytesPerParameter = 3 * 4.0;

// q/k/v, o, gate/up/down of one layer of `kind` on one rank (an MoE layer: the router, the rank's experts and its
// shard of the shared expert; a hybrid stack's linear-attention layer: its projections instead of q/k/v and o).
double linear_parameters_per_layer(const ArchSpec& arch, const TpShard& shard, LayerKind kind);
// The same summed over the range's layers, each of its kind.
double linear_parameters_of_layers(const ArchSpec& arch, const TpShard& shard, LayerRange range);
// The expert parameters of layer `layer` (0 for a dense FFN): what syncs over the expert-data-parallel group.
double expert_parameters_at(const ArchSpec& arch, const TpShard& shard, int64_t layer);
// Replicated on every rank: the norms, QK-norms, q/k/v biases (of the local heads), a GPT-style layer's other biases.
double small_parameters_per_layer(const ArchSpec& arch, const TpShard& shard);
// Both, for layer `layer` (numbered in the model; of its kind).
double layer_parameters_at(const ArchSpec& arch, const TpShard& shard, int64_t layer);
// Both, for the largest layer of the range (of any kind it holds).
double largest_layer_parameters(const ArchSpec& arch, const TpShard& shard, LayerRange range);
// Both, for the range's layers.
double layer_parameters_per_rank(const ArchSpec& arch, const TpShard& shard, LayerRange range);
// The embedding and LM head (one matrix when tied), split over the vocabulary, and the final norm.
double embedding_parameters_per_rank(const ArchSpec& arch, int tp);
// The part of those a program holds that runs only the embedding, only the head (the final norm and the LM
// head: a tied one is a copy of the embedding, as Megatron keeps on a pipeline's last stage), both (the
// whole model: embedding_parameters_per_rank) or neither.
double end_parameters_per_rank(const ArchSpec& arch, int tp, bool embedding, bool head);

// The bytes of a tied embedding's gradients one GPU sums with its twin when the embedding and the LM head sit on
// different pipeline stages: the embedding's 1/tp rows, over the data-parallel shards that hold them.
double tied_embedding_gradient_bytes(const ArchSpec& arch, int tp, int data_parallel_shards);

}  // namespace tpsim::model
