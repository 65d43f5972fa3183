// Affinity statistics of a checkpoint over calibration tokens (docs/shard.md has the formulas):
//   up[i][g, n]   = mean over tokens of (d act_n)^2 ||down_proj[:, n]||^2, where d act_n is the
//                   first-order change of neuron n's SwiGLU output silu(gate) * up when KV group g's
//                   attention contribution (its query heads' slice through o_proj) is removed from the
//                   residual before layer i's post-attention RMSNorm;
//   down[i][n, g] = mean over tokens of the squared first-order change of layer i + 1's q/k/v
//                   projections of KV group g (its query heads' q rows, its k and v rows) when neuron
//                   n's contribution act_n down_proj[:, n] is removed before layer i + 1's input RMSNorm.
// Both keep the whole RMSNorm Jacobian: d norm(x)[c] = gain * (c / r - x (x . c) / (D r^3)),
// r = sqrt(mean(x^2) + eps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shard/affinity.hpp"
#include "shard/checkpoint.hpp"

namespace tpsim::shard {

// Calibration tokens: a binary file of little-endian uint32 token ids, or (`text`) a text file whose
// bytes are the token ids (a tokenizer-free byte fallback: ids 0..255, meaningful only for byte-level
// vocabularies, a smoke test elsewhere). Throws InputError naming the file and any id >= vocab.
std::vector<int> read_calibration_tokens(const std::string& path, bool text, int64_t vocab);

struct AffinityOptions {
  int sequence_length = 256;  // tokens per causal sequence
  int64_t max_tokens = 0;     // 0: all of them (whole sequences only)
};

AffinityTables affinity_statistics(const Checkpoint& checkpoint, const std::vector<int>& tokens,
                                   const AffinityOptions& options);

}  // namespace tpsim::shard
