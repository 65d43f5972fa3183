// A Hugging Face checkpoint of a dense pre-norm GQA SwiGLU decoder (Llama, Qwen2, Qwen3, Danube3) in
// float32: config.json plus model.safetensors (or the shards a model.safetensors.index.json names),
// with the weight names Hugging Face writes. Tensor names and shapes are checked on reading; a
// mismatch names the tensor.
#pragma once

#include <Eigen/Dense>
#include <optional>
#include <string>
#include <vector>

#include "model/layers/arch_spec.hpp"

namespace tpsim::shard {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;

struct LayerWeights {
  Matrix q, k, v, o;                             // q [H hd, D], k and v [KV hd, D], o [D, H hd]
  Matrix gate, up, down;                         // gate and up [I, D], down [D, I]
  Vector input_norm;                             // [D] before attention
  Vector post_norm;                              // [D] before the FFN
  std::optional<Vector> q_norm, k_norm;          // [hd] (Qwen3)
  std::optional<Vector> q_bias, k_bias, v_bias;  // (Qwen2)
};

struct Checkpoint {
  model::ArchSpec arch;
  double rms_eps = 1e-6;
  double rope_theta = 10000;
  bool tied_embeddings = false;
  Matrix embed;    // [V, D]
  Matrix lm_head;  // [V, D] (a copy of embed when tied)
  Vector final_norm;
  std::vector<LayerWeights> layers;
};

// `dir` holds config.json and the weights.
Checkpoint read_checkpoint(const std::string& dir);
// Writes config.json (copied from `config_source`) and model.safetensors (float32) into `dir`.
void write_checkpoint(const std::string& dir, const Checkpoint& checkpoint, const std::string& config_source);

}  // namespace tpsim::shard
