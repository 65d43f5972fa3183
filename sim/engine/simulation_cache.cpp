// Content hash of a program and its costs, and the bounded store of simulated timelines.
#include "sim/engine/simulation_cache.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace tpsim::sim {
namespace {

SimulationCache* g_active = nullptr;

// Two independent 64-bit lanes over the same 8-byte words (a value widened to a word, a text's bytes in words with
// its length first): a multiply-xorshift lane and a multiply-rotate one, with different constants (a collision needs
// both; the multipliers are splitmix64's and the 64-bit golden ratio). Word at a time, the key of a large program
// costs a fraction of a byte-at-a-time hash.
class Hasher {
 public:
  void word(uint64_t w) {
    a_ = (a_ ^ w) * 0x9e3779b97f4a7c15ULL;
    a_ ^= a_ >> 32;
    b_ += w * 0xbf58476d1ce4e5b9ULL;
    b_ = ((b_ << 27) | (b_ >> 37)) * 0x94d049bb133111ebULL;
  }
  template <typename T>
  void value(const T& v) {
    static_assert((std::is_arithmetic_v<T> || std::is_enum_v<T>)&&sizeof(T) <= sizeof(uint64_t));
    uint64_t w = 0;
    std::memcpy(&w, &v, sizeof v);
    word(w);
  }
  void text(const std::string& s) {
    value(s.size());
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, 8);
      word(w);
    }
    if (i < s.size()) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i);
      word(w);
    }
  }
  SimulationCache::Key key() const { return {a_ ^ (a_ >> 29), b_ ^ (b_ >> 31)}; }

 private:
  uint64_t a_ = 0xcbf29ce484222325ULL;
  uint64_t b_ = 0x2545f4914f6cdd1dULL;
};

// Every field of the op that the engine or the cost model reads (the shape text only labels traces).
void hash_op(Hasher& h, const model::Op& op) {
  h.text(op.name);
  h.value(op.kind), h.value(op.stream), h.value(op.layer), h.value(op.module), h.value(op.stage);
  h.value(op.saved_as), h.value(op.linear), h.value(op.linear_part), h.value(op.quantisation);
  h.value(op.gemm.m), h.value(op.gemm.n), h.value(op.gemm.k), h.value(op.gemm.groups), h.value(op.gemm.groups_split_k);
  h.value(op.fused_rows), h.value(op.continues_kernel), h.value(op.bytes_in_registers), h.value(op.fp8);
  h.value(op.linear_scan.kernel), h.value(op.linear_scan.chunk_steps), h.value(op.linear_scan.chains);
  h.value(op.flops), h.value(op.bytes_read), h.value(op.bytes_written);
  h.value(op.collective), h.value(op.algorithm), h.value(op.protocol), h.value(op.tensor_bytes), h.value(op.group);
  h.value(op.group_size), h.value(op.group_stride), h.value(op.send_offset), h.value(op.recv_offset);
  h.value(op.message_bytes), h.value(op.transport), h.value(op.comm_sms), h.value(op.pipeline_stage);
  h.value(op.receiving_stage);
  h.value(op.deps.size());
  for (const model::Dep& d : op.deps) h.value(d.op), h.value(d.rank_offset), h.value(d.data);
  h.value(op.output_bytes);
}

int64_t timeline_bytes(size_t spans) {
  return static_cast<int64_t>(spans * sizeof(OpSpan) + sizeof(Timeline));
}

}  // namespace

void SimulationCache::install() {
  if (g_active && g_active != this) throw std::logic_error("a simulation cache is already installed");
  g_active = this;
  installed_ = true;
}

SimulationCache::~SimulationCache() {
  if (installed_ && g_active == this) g_active = nullptr;
}

SimulationCache::Key SimulationCache::key(const model::LayerGraph& graph, const CostModel& cost,
                                          const EngineOptions& options) const {
  Hasher h;
  h.text(context_);
  h.text(cost.gpu().name);
  h.text(cost.profile().name);
  h.value(cost.clock_ratio());
  const Fabric& f = cost.fabric();
  h.value(f.kind), h.value(f.max_gpus), h.value(f.port_Bps), h.value(f.bridge_Bps), h.value(f.in_switch_reduction);
  h.value(f.nodes), h.value(f.gpus_per_node), h.value(f.nic_Bps), h.value(f.oversubscription);
  h.value(options.host_launch_s), h.value(options.stream_wait_s), h.value(options.collective_host_s);
  h.value(options.gpu_wait_s);
  h.value(graph.tp());
  h.value(graph.size());
  for (const model::Op& op : graph.ops()) hash_op(h, op);
  return h.key();
}

std::optional<Timeline> SimulationCache::find(const Key& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  const Entry& entry = it->second;
  stats_.saved_s += entry.wall_s;
  Timeline timeline = entry.rest;
  const auto* spans = static_cast<const OpSpan*>(entry.spans.data());
  timeline.spans.assign(spans, spans + entry.span_count);
  return timeline;
}

void SimulationCache::store(const Key& key, const Timeline& timeline, double wall_s) {
  const int64_t bytes = timeline_bytes(timeline.spans.size());
  if (bytes > budget_bytes_ || entries_.count(key)) return;
  while (held_bytes_ + bytes > budget_bytes_ && !order_.empty()) {
    const auto it = entries_.find(order_.front());
    held_bytes_ -= timeline_bytes(it->second.span_count);
    entries_.erase(it);
    order_.pop_front();
  }
  Entry entry{UnforkedBuffer(timeline.spans.size() * sizeof(OpSpan)), timeline.spans.size(), {}, wall_s};
  std::copy(timeline.spans.begin(), timeline.spans.end(), static_cast<OpSpan*>(entry.spans.data()));
  entry.rest.ranks = timeline.ranks;
  entry.rest.makespan_s = timeline.makespan_s;
  entries_.emplace(key, std::move(entry));
  order_.push_back(key);
  held_bytes_ += bytes;
}

SimulationCache* active_simulation_cache() {
  return g_active;
}

bool cacheable(const EngineOptions& options) {
  return !options.skew.enabled() && !options.data_group.has_value();
}

}  // namespace tpsim::sim
