// Divisibility rules of tensor parallelism over heads and FFN neurons.
#include "model/layers/arch_spec.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "model/moe/expert_parallel.hpp"

namespace tpsim::model {

int64_t LinearAttentionSpec::linear_count(LayerRange range) const {
  int64_t count = 0;
  for (int64_t layer = range.first; layer < range.first + range.count; ++layer) count += is_linear(layer) ? 1 : 0;
  return count;
}

int64_t MoeSpec::moe_count(LayerRange range) const {
  int64_t count = 0;
  for (int64_t layer = range.first; layer < range.first + range.count; ++layer) count += is_moe(layer) ? 1 : 0;
  return count;
}

bool MoeSpec::has_dense_layers() const {
  return enabled() && std::find(dense_layers.begin(), dense_layers.end(), true) != dense_layers.end();
}

int64_t ArchSpec::windowed_count(LayerRange range) const {
  int64_t count = 0;
  for (int64_t layer = range.first; layer < range.first + range.count; ++layer) count += window_at(layer) > 0 ? 1 : 0;
  return count;
}

bool ArchSpec::uniform(LayerRange range) const {
  for (int64_t layer = range.first + 1; layer < range.first + range.count; ++layer) {
    if (kind(layer) != kind(range.first)) return false;
  }
  return true;
}

int64_t ArchSpec::count_of(LayerKind k, LayerRange range) const {
  int64_t count = 0;
  for (int64_t layer = range.first; layer < range.first + range.count; ++layer) count += kind(layer) == k ? 1 : 0;
  return count;
}

TpShard shard_for_tp(const ArchSpec& arch, int tp, int ep, int etp) {
  const std::string who = "model " + arch.name + " with tp=" + std::to_string(tp) + ": ";
  if (tp < 1) throw InputError(who + "tp must be at least 1");
  if (arch.heads % tp != 0) {
    throw InputError(who + "tp must divide the " + std::to_string(arch.heads) +
                     " query heads (valid tp values divide " + std::to_string(arch.heads) + ")");
  }
  if (arch.has_dense_ffn() && arch.intermediate % tp != 0) {
    throw InputError(who + "tp must divide the FFN width " + std::to_string(arch.intermediate));
  }
  TpShard shard;
  shard.tp = tp;
  shard.q_heads = arch.heads / tp;
  shard.ffn = arch.has_dense_ffn() ? arch.intermediate / tp : 0;
  if (arch.moe.enabled()) {
    if (ep < 1 || arch.moe.experts % ep != 0) {
      throw InputError("model " + arch.name + " with ep=" + std::to_string(ep) + ": ep must divide the " +
                       std::to_string(arch.moe.experts) + " experts");
    }
    shard.experts = arch.moe.experts / ep;
    shard.expert_tp = experts_split_over_tp(tp, ep);
    if (shard.expert_tp && arch.moe.expert_ffn % tp != 0) {
      throw InputError(who + "tp must divide each expert's FFN width " + std::to_string(arch.moe.expert_ffn) +
                       " (ep 1 splits every expert over the TP group)");
    }
    if (etp < 1 || arch.moe.expert_ffn % etp != 0) {
      throw InputError("model " + arch.name + " with etp=" + std::to_string(etp) +
                       ": etp must divide each expert's FFN width " + std::to_string(arch.moe.expert_ffn));
    }
    shard.expert_ffn = shard.expert_tp ? arch.moe.expert_ffn / tp : arch.moe.expert_ffn / etp;
    if (arch.moe.shared_expert_ffn % tp != 0) {
      throw InputError(who + "tp must divide the shared expert's FFN width " +
                       std::to_string(arch.moe.shared_expert_ffn));
    }
    shard.shared_expert_ffn = arch.moe.shared_expert_ffn / tp;
  }
  if (arch.linear.enabled()) {
    const LinearAttentionSpec& l = arch.linear;
    if (l.key_heads % tp != 0 || l.value_heads % tp != 0) {
      throw InputError(who + "tp must divide the linear-attention layers' " + std::to_string(l.key_heads) +
                       " key heads and " + std::to_string(l.value_heads) + " value heads");
    }
    shard.linear_key_heads = l.key_heads / tp;
    shard.linear_value_heads = l.value_heads / tp;
  }
  if (arch.kv_heads >= tp) {
    if (arch.kv_heads % tp != 0) {
      throw InputError(who + "tp must divide the " + std::to_string(arch.kv_heads) +
                       " KV heads, or be a multiple of them");
    }
    shard.kv_heads = arch.kv_heads / tp;
  } else {
    if (tp % arch.kv_heads != 0) {
      throw InputError(who + "tp is above the " + std::to_string(arch.kv_heads) +
                       " KV heads, so it must be a multiple of them to replicate them");
    }
    shard.kv_heads = 1;
    shard.kv_replicated = true;
  }
  return shard;
}

}  // namespace tpsim::model
