// The decoder forward pass, written for clarity over speed.
#include "shard/forward.hpp"

#include <cmath>

#include "base/input_error.hpp"

namespace tpsim::shard {
namespace {

float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

// Hugging Face's rotary embedding: pairs (j, j + hd/2) rotate by position * theta^(-2j/hd).
void apply_rope(Matrix& heads, int64_t head_count, int64_t head_dim, double theta) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < heads.rows(); ++t) {
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(t) * std::pow(theta, -2.0 * static_cast<double>(j) / head_dim);
      const auto c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      for (int64_t h = 0; h < head_count; ++h) {
        float& a = heads(t, h * head_dim + j);
        float& b = heads(t, h * head_dim + j + half);
        const float x = a, y = b;
        a = x * c - y * s;
        b = y * c + x * s;
      }
    }
  }
}

void head_norm(Matrix& heads, int64_t head_count, int64_t head_dim, const Vector& gain, double eps) {
  for (int64_t h = 0; h < head_count; ++h) {
    Matrix block = heads.middleCols(h * head_dim, head_dim);
    heads.middleCols(h * head_dim, head_dim) = rms_norm(block, gain, eps);
  }
}

Matrix attention(const Checkpoint& c, const LayerWeights& l, const Matrix& normed) {
  const model::ArchSpec& a = c.arch;
  const int64_t T = normed.rows(), hd = a.head_dim, per_group = a.heads / a.kv_heads;
  Matrix q = normed * l.q.transpose(), k = normed * l.k.transpose(), v = normed * l.v.transpose();
  if (l.q_bias) {
    q.rowwise() += l.q_bias->transpose();
    k.rowwise() += l.k_bias->transpose();
    v.rowwise() += l.v_bias->transpose();
  }
  if (l.q_norm) {
    head_norm(q, a.heads, hd, *l.q_norm, c.rms_eps);
    head_norm(k, a.kv_heads, hd, *l.k_norm, c.rms_eps);
  }
  apply_rope(q, a.heads, hd, c.rope_theta);
  apply_rope(k, a.kv_heads, hd, c.rope_theta);
  Matrix out = Matrix::Zero(T, a.heads * hd);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t h = 0; h < a.heads; ++h) {
    const int64_t g = h / per_group;
    const Matrix scores = (q.middleCols(h * hd, hd) * k.middleCols(g * hd, hd).transpose()) * scale;
    for (int64_t t = 0; t < T; ++t) {
      const float top = scores.row(t).head(t + 1).maxCoeff();
      Eigen::RowVectorXf p = (scores.row(t).head(t + 1).array() - top).exp();
      p /= p.sum();
      out.row(t).segment(h * hd, hd) = p * v.middleCols(g * hd, hd).topRows(t + 1);
    }
  }
  return out;
}

}  // namespace

Matrix rms_norm(const Matrix& x, const Vector& gain, double eps) {
  Matrix out(x.rows(), x.cols());
  for (int64_t t = 0; t < x.rows(); ++t) {
    const float inv = 1.0f / std::sqrt(x.row(t).squaredNorm() / static_cast<float>(x.cols()) + static_cast<float>(eps));
    out.row(t) = x.row(t).cwiseProduct(gain.transpose()) * inv;
  }
  return out;
}

Matrix forward(const Checkpoint& c, const std::vector<int>& tokens, std::vector<LayerTrace>* traces, bool logits) {
  const model::ArchSpec& a = c.arch;
  Matrix x(static_cast<int64_t>(tokens.size()), a.hidden);
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= a.vocab) {
      throw InputError("token " + std::to_string(tokens[t]) + " at position " + std::to_string(t) +
                       " is outside the vocabulary of " + std::to_string(a.vocab));
    }
    x.row(static_cast<int64_t>(t)) = c.embed.row(tokens[t]);
  }
  if (traces) traces->assign(c.layers.size(), LayerTrace{});
  for (size_t i = 0; i < c.layers.size(); ++i) {
    const LayerWeights& l = c.layers[i];
    LayerTrace trace;
    trace.x_attn = x;
    trace.attn = attention(c, l, rms_norm(x, l.input_norm, c.rms_eps));
    x += trace.attn * l.o.transpose();
    trace.x_mlp = x;
    const Matrix normed = rms_norm(x, l.post_norm, c.rms_eps);
    trace.gate = normed * l.gate.transpose();
    trace.up = normed * l.up.transpose();
    trace.act = trace.gate.unaryExpr(&silu).cwiseProduct(trace.up);
    x += trace.act * l.down.transpose();
    if (traces) (*traces)[i] = std::move(trace);
  }
  if (!logits) return Matrix();
  return rms_norm(x, c.final_norm, c.rms_eps) * c.lm_head.transpose();
}

}  // namespace tpsim::shard
