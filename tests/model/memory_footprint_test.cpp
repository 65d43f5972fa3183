// Memory per GPU: weights, KV cache, activations and TP-mode buffers, from the shapes they are made of.
#include <catch2/catch.hpp>

#include "input/presets.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/scenario.hpp"

using namespace tpsim;

namespace {

model::Scenario scenario(const std::string& workload, const std::string& model = "llama-3.1-8b",
                         const std::string& variants =
                             "[{name: tp, tp_mode: tp}, {name: sp, tp_mode: sp}, "
                             "{name: dtp, tp_mode: dtp, delta: 2}]") {
  return model::parse_scenario("model: " + model + "\nhardware: {gpu: h100-sxm}\nworkload: " + workload +
                                   "\nparallelism: {tp: 8}\nvariants: " + variants + "\n",
                               "t.yaml");
}

}  // namespace

TEST_CASE("weights per GPU are the layers' parameters over tp plus the vocab-parallel embedding and LM head") {
  const model::Scenario s = scenario("{phase: forward, batch: 1, seq_len: 512, layers: all}");
  const model::ArchSpec& a = s.arch;  // Llama-3.1-8B: 4096 hidden, 14336 FFN, 32 heads, 8 KV heads of 128, untied
  const double tp = 8, hd = 128;
  const double linear = a.hidden * (a.heads / tp + 2 * a.kv_heads / tp) * hd + a.heads / tp * hd * a.hidden +
                        3.0 * a.hidden * a.intermediate / tp;
  const double per_layer = linear * 2 + 2.0 * a.hidden * 2;                    // bf16 weights, two bf16 norms
  const double embeddings = 2 * (a.vocab / tp) * a.hidden * 2 + a.hidden * 2;  // embedding, LM head, final norm
  const model::MemoryFootprint m = model::memory_footprint(a, s.workload, s.variants[0], 8);
  CHECK(m.weights_bytes == Approx(a.layers * per_layer + embeddings));
  // About 8 billion parameters over 8 GPUs in bf16: about 2 GB each.
  CHECK(m.weights_bytes / 1e9 == Approx(8.03 * 2 / 8).epsilon(0.02));
  CHECK(m.kv_cache_bytes == 0);  // a forward pass keeps no cache
  // fp8 linear layers hold one byte per parameter.
  model::Workload fp8 = s.workload;
  fp8.dtype = model::Dtype::kFp8;
  CHECK(model::memory_footprint(a, fp8, s.variants[0], 8).weights_bytes ==
        Approx(a.layers * (linear + 2.0 * a.hidden * 2) + embeddings));
  // A tied LM head is the embedding: one copy.
  model::ArchSpec tied = a;
  tied.tied_embeddings = true;
  CHECK(m.weights_bytes - model::memory_footprint(tied, s.workload, s.variants[0], 8).weights_bytes ==
        Approx((a.vocab / tp) * a.hidden * 2));
}

TEST_CASE("a generate's KV cache holds K and V of every layer for the prompt and every new token") {
  const model::Scenario s = scenario("{phase: generate, batch: 8, context_len: 2048, gen_len: 256, layers: all}");
  const model::ArchSpec& a = s.arch;
  const model::MemoryFootprint m = model::memory_footprint(a, s.workload, s.variants[0], 8);
  // 8 KV heads over 8 GPUs: one each.
  CHECK(m.kv_cache_bytes == Approx(2.0 * a.layers * 1 * 128 * 8 * (2048 + 256) * 2));
  model::Workload fp8 = s.workload;
  fp8.attention_dtype = model::Dtype::kFp8;
  CHECK(model::memory_footprint(a, fp8, s.variants[0], 8).kv_cache_bytes == Approx(m.kv_cache_bytes / 2));
}

TEST_CASE("sequence parallelism shards the residual stream, and DTP holds delta + 1 partials in flight") {
  const model::Scenario s = scenario("{phase: forward, batch: 2, seq_len: 4096, layers: 2}");
  const double tokens = 2 * 4096, hidden = 4096;
  const model::MemoryFootprint tp = model::memory_footprint(s.arch, s.workload, s.variants[0], 8);
  const model::MemoryFootprint sp = model::memory_footprint(s.arch, s.workload, s.variants[1], 8);
  const model::MemoryFootprint dtp = model::memory_footprint(s.arch, s.workload, s.variants[2], 8);
  CHECK(tp.activation_bytes - sp.activation_bytes == Approx(tokens * hidden * (1 - 1.0 / 8) * 2));
  CHECK(dtp.buffer_bytes == Approx(3 * tokens * hidden * 2));
  CHECK(tp.buffer_bytes == 0);
  CHECK(tp.tensor_bytes() == Approx(tp.weights_bytes + tp.activation_bytes));
}

TEST_CASE(
    "async TP's pipelines hold both collectives' buffers as tensors, but PyTorch's symmetric memory holds the "
    "reduce-scatter's two output chunks outside the caching allocator") {
  const std::string async = "[{name: async, tp_mode: async}]";
  const model::Scenario ideal = scenario("{phase: forward, batch: 2, seq_len: 4096, layers: 2}", "llama-3.1-8b", async);
  const double tokens = 2 * 4096, hidden = 4096, tp = 8;
  const model::MemoryFootprint pipeline = model::memory_footprint(ideal.arch, ideal.workload, ideal.variants[0], 8);
  CHECK(pipeline.buffer_bytes == Approx(2 * tokens * hidden * 2));
  CHECK(pipeline.symmetric_memory_bytes == 0);
  model::Workload torch = ideal.workload;
  torch.implementation.async_tp = model::AsyncTpKernel::kSymmMem;
  const model::MemoryFootprint symm = model::memory_footprint(ideal.arch, torch, ideal.variants[0], 8);
  CHECK(symm.buffer_bytes == 0);
  // get_symm_mem_workspace's largest request: [tokens / tp, hidden] bf16, double-buffered.
  CHECK(symm.symmetric_memory_bytes == Approx(2 * tokens / tp * hidden * 2));
  CHECK(symm.peak_reserved_bytes() == Approx(pipeline.peak_reserved_bytes() - pipeline.buffer_bytes));
  CHECK(symm.device_bytes() == Approx(symm.peak_reserved_bytes() + symm.symmetric_memory_bytes));
}

TEST_CASE("a training step holds fp32 gradients and AdamW state for every parameter, and its saved activations") {
  const std::string tp_only = "[{name: tp, tp_mode: tp}]";
  const model::Scenario s = scenario("{phase: train, batch: 1, seq_len: 1024, layers: 2}", "llama-3.1-8b", tp_only);
  const model::Scenario r =
      scenario("{phase: train, batch: 1, seq_len: 1024, layers: 2, recompute: full}", "llama-3.1-8b", tp_only);
  const model::MemoryFootprint m = model::memory_footprint(s.arch, s.workload, s.variants[0], 8);
  const model::MemoryFootprint full = model::memory_footprint(r.arch, r.workload, r.variants[0], 8);
  const model::MemoryFootprint forward = model::memory_footprint(
      s.arch, scenario("{phase: forward, batch: 1, seq_len: 1024, layers: 2}").workload, s.variants[0], 8);
  // Parameters: the bf16 weights are 2 bytes each; gradients 4, master weights and two moments 12.
  const double params = forward.weights_bytes / 2;
  CHECK(m.gradient_bytes == Approx(4 * params));
  CHECK(m.optimizer_bytes == Approx(12 * params));
  // Saved for the backward under tp (no recomputation), per layer: the attention module's input, its
  // normed input, QKV, rotated Q and K, the attention output; the FFN's input, normed input, gate/up and
  // SwiGLU output. The LM head's backward reads the last residual and the final norm's output, the
  // loss's backward its fp32 softmax over the rank's vocab / 8 columns and the all-reduced fp32 sum of
  // exponentials per token that normalises it.
  const double t = 1024, h = 4096, d = 128, hq = 4, hkv = 1, f = 14336.0 / 8, v = 128256.0 / 8;
  const double attention = t * (h + h + (hq + 2 * hkv) * d + (hq + hkv) * d + hq * d);
  const double ffn = t * (h + h + 2 * f + f);
  const double softmax = 4 * t * v + 4 * t;
  const double saved = 2 * (2 * (attention + ffn) + 2 * t * h) + softmax;
  CHECK(m.activation_bytes - forward.activation_bytes == Approx(saved));
  // Full recomputation keeps each layer's input, the head's two and the softmax with its sum, and one layer's
  // recomputed set (all of it but the attention input, which the forward kept).
  const double recomputed = 2 * (2 * t * h + 2 * t * h + (attention + ffn - t * h)) + softmax;
  CHECK(full.activation_bytes - forward.activation_bytes == Approx(recomputed));
}

TEST_CASE("recomputing the first N layers saves what N - 1 of them would keep beyond their inputs") {
  const std::string tp_only = "[{name: tp, tp_mode: tp}]";
  const std::string base = "{phase: train, batch: 1, seq_len: 1024, layers: 3";
  const model::Scenario none = scenario(base + "}", "llama-3.1-8b", tp_only);
  const model::Scenario two = scenario(base + ", recompute: full, recompute_layers: 2}", "llama-3.1-8b", tp_only);
  const auto activations = [](const model::Scenario& s) {
    return model::memory_footprint(s.arch, s.workload, s.variants[0], 8).activation_bytes;
  };
  // Layers 0 and 1 keep only their inputs; one layer's recomputed set (all of its saved set but that input) is held
  // beside every saved activation (an upper bound: its backward runs after layer 2's set is freed). So the step
  // holds (2 - 1) layers' sets beyond their inputs less than without recomputation (bf16, the sizes above).
  const double t = 1024, h = 4096, d = 128, hq = 4, hkv = 1, f = 14336.0 / 8;
  const double attention = t * (h + h + (hq + 2 * hkv) * d + (hq + hkv) * d + hq * d);
  const double ffn = t * (h + h + 2 * f + f);
  CHECK(activations(none) - activations(two) == Approx(2 * (attention + ffn - t * h)));
}
