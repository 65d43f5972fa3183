// Checkpoints, the CPU forward pass, affinity statistics against finite differences, and permuted
// checkpoints that compute the same function.
#include <catch2/catch.hpp>
#include <cmath>

#include "base/input_error.hpp"
#include "checkpoint_support.hpp"
#include "shard/affinity_stats.hpp"
#include "shard/apply_layout.hpp"
#include "shard/forward.hpp"

using namespace tpsim::shard;
using tpsim::test::TinyModel;
using tpsim::test::write_tiny_checkpoint;

namespace {

std::vector<int> probe_tokens(int count, int vocab) {
  std::vector<int> tokens;
  for (int t = 0; t < count; ++t) tokens.push_back((5 * t + 1) % vocab);
  return tokens;
}

Matrix silu_times(const Matrix& gate, const Matrix& up) {
  return gate.unaryExpr([](float x) { return x / (1.0f + std::exp(-x)); }).cwiseProduct(up);
}

// Affinity statistics of a checkpoint over 8 probe tokens, and the forward pass's traces on them.
struct ProbedCheckpoint {
  AffinityTables tables;
  std::vector<LayerTrace> traces;
};

ProbedCheckpoint probe(const Checkpoint& c, int vocab) {
  const std::vector<int> tokens = probe_tokens(8, vocab);
  AffinityOptions options;
  options.sequence_length = 8;
  ProbedCheckpoint out{affinity_statistics(c, tokens, options), {}};
  forward(c, tokens, &out.traces, false);
  return out;
}

}  // namespace

TEST_CASE("a permuted checkpoint computes the same logits, with q/k norms and with q/k/v biases") {
  for (const char* type : {"qwen3", "qwen2", "llama"}) {
    TinyModel m;
    m.model_type = type;
    const Checkpoint c = read_checkpoint(write_tiny_checkpoint(std::string("tpsim_tiny_") + type, m, 3));
    AffinityTables shape{m.layers, m.kv_heads, m.intermediate, {}, {}};
    const Layout layout = random_layout(shape, 2, 11);
    const Checkpoint p = permuted(c, layout);
    INFO(type);
    CHECK(logit_difference(c, p) < 1e-5);
    // The permutation did move weights: layer 0's gate rows are not where they were.
    CHECK((p.layers[0].gate - c.layers[0].gate).cwiseAbs().maxCoeff() > 0);
  }
}

TEST_CASE("the forward pass is causal: a later token never changes an earlier position's logits") {
  const Checkpoint c = read_checkpoint(write_tiny_checkpoint("tpsim_tiny_causal", TinyModel{}, 5));
  std::vector<int> tokens = probe_tokens(10, 40);
  const Matrix a = forward(c, tokens, nullptr);
  tokens[9] = (tokens[9] + 7) % 40;
  const Matrix b = forward(c, tokens, nullptr);
  CHECK((a.topRows(9) - b.topRows(9)).cwiseAbs().maxCoeff() == 0.0f);
  CHECK((a.row(9) - b.row(9)).cwiseAbs().maxCoeff() > 0.0f);
  CHECK(a.allFinite());
}

TEST_CASE("the first-order up score matches removing a small group contribution for real") {
  TinyModel m;
  Checkpoint c = read_checkpoint(write_tiny_checkpoint("tpsim_tiny_fd", m, 9));
  const int64_t width = m.heads / m.kv_heads * m.head_dim, group = 1;
  const float epsilon = 1e-3f;  // the group's contribution, small: the first order dominates
  c.layers[0].o.middleCols(group * width, width) *= epsilon;
  const ProbedCheckpoint probed = probe(c, m.vocab);
  const AffinityTables& t = probed.tables;
  const std::vector<LayerTrace>& traces = probed.traces;
  const LayerTrace& tr = traces[0];
  const LayerWeights& l = c.layers[0];
  const Matrix contribution =
      tr.attn.middleCols(group * width, width) * l.o.middleCols(group * width, width).transpose();
  const Matrix ablated = rms_norm(tr.x_mlp - contribution, l.post_norm, c.rms_eps);
  const Matrix change = silu_times(ablated * l.gate.transpose(), ablated * l.up.transpose()) - tr.act;
  for (int64_t n = 0; n < m.intermediate; ++n) {
    const double measured = change.col(n).squaredNorm() / 8.0 * l.down.col(n).squaredNorm();
    CHECK(t.up_at(0, static_cast<int>(group), static_cast<int>(n)) == Approx(measured).epsilon(0.02));
  }
}

TEST_CASE("the first-order down score matches removing a small neuron contribution for real") {
  TinyModel m;
  Checkpoint c = read_checkpoint(write_tiny_checkpoint("tpsim_tiny_fd_down", m, 13));
  const int64_t neuron = 5, hd = m.head_dim, per_group = m.heads / m.kv_heads;
  c.layers[0].down.col(neuron) *= 1e-3f;
  const ProbedCheckpoint probed = probe(c, m.vocab);
  const AffinityTables& t = probed.tables;
  const std::vector<LayerTrace>& traces = probed.traces;
  const LayerWeights& next = c.layers[1];
  const Matrix x = traces[1].x_attn;
  const Matrix removed = x - traces[0].act.col(neuron) * c.layers[0].down.col(neuron).transpose();
  const Matrix before = rms_norm(x, next.input_norm, c.rms_eps), after = rms_norm(removed, next.input_norm, c.rms_eps);
  for (int64_t g = 0; g < m.kv_heads; ++g) {
    const Matrix dq = (after - before) * next.q.middleRows(g * per_group * hd, per_group * hd).transpose();
    const Matrix dk = (after - before) * next.k.middleRows(g * hd, hd).transpose();
    const Matrix dv = (after - before) * next.v.middleRows(g * hd, hd).transpose();
    const double measured = (dq.squaredNorm() + dk.squaredNorm() + dv.squaredNorm()) / 8.0;
    CHECK(t.down_at(0, static_cast<int>(neuron), static_cast<int>(g)) == Approx(measured).epsilon(0.02));
  }
}

TEST_CASE("checkpoints with a wrong tensor shape, and tokens outside the vocabulary, are named") {
  TinyModel m;
  const std::string dir = write_tiny_checkpoint("tpsim_tiny_bad", m, 1);
  SafetensorsFile f = read_safetensors(dir + "/model.safetensors");
  f.tensors["model.layers.1.mlp.up_proj.weight"].shape = {12, 32};
  write_safetensors(dir + "/model.safetensors", f);
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains("tensor 'model.layers.1.mlp.up_proj.weight' has shape [12, "
                                                          "32], the config implies [24, 16]"));
  const std::string tokens = (std::filesystem::temp_directory_path() / "tpsim_tokens.bin").string();
  std::ofstream(tokens, std::ios::binary).write("\x05\x00\x00\x00\x63\x00\x00\x00", 8);
  CHECK_THROWS_WITH(read_calibration_tokens(tokens, false, 40), Catch::Contains("token 1 is 99, outside"));
  CHECK(read_calibration_tokens(tokens, true, 256).size() == 8);
}

TEST_CASE("a checkpoint config's null norm epsilon, RoPE base and tying read as transformers' defaults") {
  const std::string dir = write_tiny_checkpoint("tpsim_tiny_nulls", TinyModel{}, 1);
  std::ofstream(dir + "/config.json") << R"({"model_type": "qwen3", "hidden_size": 16, "intermediate_size": 24,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4, "num_hidden_layers": 2, "vocab_size": 40,
    "rms_norm_eps": null, "rope_theta": null, "tie_word_embeddings": null})";
  const Checkpoint c = read_checkpoint(dir);
  CHECK(c.rms_eps == 1e-6);
  CHECK(c.rope_theta == 10000);
  CHECK_FALSE(c.tied_embeddings);
}

TEST_CASE("a GPT-style or windowed checkpoint is refused at its model_type: shard permutes Llama-style layers only") {
  const std::string dir = write_tiny_checkpoint("tpsim_tiny_gpt_style", TinyModel{}, 1);
  std::ofstream(dir + "/config.json") << R"({"hidden_size": 16, "intermediate_size": 24,
    "model_type": "gpt_neox", "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 40})";
  // "model_type" opens line 2 at column 5 (1-based).
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains("config.json:2:5:") &&
                                              Catch::Contains("model_type \"gpt_neox\"") &&
                                              Catch::Contains("tpsim shard permutes Llama-style layers"));
  std::ofstream(dir + "/config.json") << R"({"model_type": "mistral", "hidden_size": 16, "intermediate_size": 24,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4, "num_hidden_layers": 2, "vocab_size": 40,
    "sliding_window": 4})";
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains("config.json:1:2:") && Catch::Contains("\"mistral\""));
}
