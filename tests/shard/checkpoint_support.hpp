// Tiny decoder checkpoints written by the tests (no downloads): config.json and model.safetensors with
// random weights, Qwen3-style (q/k norms), Qwen2-style (q/k/v biases) or Llama-style.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "shard/safetensors.hpp"

namespace tpsim::test {

struct TinyModel {
  std::string model_type = "qwen3";
  int hidden = 16, heads = 4, kv_heads = 2, head_dim = 4, intermediate = 24, layers = 2, vocab = 40;
};

inline std::string write_tiny_checkpoint(const std::string& name, const TinyModel& m, uint64_t seed) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / name;
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\"model_type\": \"" << m.model_type << "\", \"hidden_size\": " << m.hidden
                                     << ", \"intermediate_size\": " << m.intermediate
                                     << ", \"num_attention_heads\": " << m.heads
                                     << ", \"num_key_value_heads\": " << m.kv_heads << ", \"head_dim\": " << m.head_dim
                                     << ", \"num_hidden_layers\": " << m.layers << ", \"vocab_size\": " << m.vocab
                                     << ", \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0, "
                                        "\"tie_word_embeddings\": false, \"max_position_embeddings\": 4096}\n";
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  shard::SafetensorsFile f;
  auto add = [&](const std::string& tensor, std::vector<int64_t> shape, float scale, float offset = 0.0f) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<float> values(static_cast<size_t>(count));
    for (float& v : values) v = offset + scale * normal(engine);
    f.tensors[tensor] = shard::Tensor{std::move(shape), std::move(values)};
  };
  const int64_t D = m.hidden, q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim, I = m.intermediate;
  add("model.embed_tokens.weight", {m.vocab, D}, 1.0f);
  add("lm_head.weight", {m.vocab, D}, 0.3f);
  add("model.norm.weight", {D}, 0.1f, 1.0f);
  for (int i = 0; i < m.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "self_attn.q_proj.weight", {q, D}, 0.3f);
    add(p + "self_attn.k_proj.weight", {kv, D}, 0.3f);
    add(p + "self_attn.v_proj.weight", {kv, D}, 0.3f);
    add(p + "self_attn.o_proj.weight", {D, q}, 0.3f);
    add(p + "mlp.gate_proj.weight", {I, D}, 0.3f);
    add(p + "mlp.up_proj.weight", {I, D}, 0.3f);
    add(p + "mlp.down_proj.weight", {D, I}, 0.3f);
    add(p + "input_layernorm.weight", {D}, 0.1f, 1.0f);
    add(p + "post_attention_layernorm.weight", {D}, 0.1f, 1.0f);
    if (m.model_type == "qwen3") {
      add(p + "self_attn.q_norm.weight", {m.head_dim}, 0.1f, 1.0f);
      add(p + "self_attn.k_norm.weight", {m.head_dim}, 0.1f, 1.0f);
    }
    if (m.model_type == "qwen2") {
      add(p + "self_attn.q_proj.bias", {q}, 0.1f);
      add(p + "self_attn.k_proj.bias", {kv}, 0.1f);
      add(p + "self_attn.v_proj.bias", {kv}, 0.1f);
    }
  }
  shard::write_safetensors((dir / "model.safetensors").string(), f);
  return dir.string();
}

}  // namespace tpsim::test
