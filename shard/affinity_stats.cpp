// First-order affinity statistics, accumulated per sequence from the forward pass's layer traces.
#include "shard/affinity_stats.hpp"

#include <cmath>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "shard/forward.hpp"

namespace tpsim::shard {
namespace {

// Per-row r = sqrt(mean(x^2) + eps).
Eigen::VectorXf row_rms(const Matrix& x, double eps) {
  Eigen::VectorXf r(x.rows());
  for (int64_t t = 0; t < x.rows(); ++t) {
    r(t) = std::sqrt(x.row(t).squaredNorm() / static_cast<float>(x.cols()) + static_cast<float>(eps));
  }
  return r;
}

// The rows of q, k and v that belong to KV group g of a layer: [R, D].
Matrix group_qkv(const LayerWeights& l, const model::ArchSpec& a, int64_t g) {
  const int64_t hd = a.head_dim, per_group = a.heads / a.kv_heads;
  Matrix w(per_group * hd + 2 * hd, a.hidden);
  w << l.q.middleRows(g * per_group * hd, per_group * hd), l.k.middleRows(g * hd, hd), l.v.middleRows(g * hd, hd);
  return w;
}

void add_up(const Checkpoint& c, const LayerWeights& l, const LayerTrace& tr, std::vector<double>& up) {
  const model::ArchSpec& a = c.arch;
  const int64_t T = tr.x_mlp.rows(), D = a.hidden, I = a.intermediate;
  const int64_t width = a.heads / a.kv_heads * a.head_dim;  // a group's columns of the attention output
  const Eigen::VectorXf r = row_rms(tr.x_mlp, c.rms_eps);
  const Matrix silu = tr.gate.unaryExpr([](float x) { return x / (1.0f + std::exp(-x)); });
  const Matrix dsilu = tr.gate.unaryExpr([](float x) {
    const float s = 1.0f / (1.0f + std::exp(-x));
    return s * (1.0f + x * (1.0f - s));
  });
  const Eigen::VectorXf down_norm2 = l.down.colwise().squaredNorm().transpose();
  for (int64_t g = 0; g < a.kv_heads; ++g) {
    const Matrix contribution = tr.attn.middleCols(g * width, width) * l.o.middleCols(g * width, width).transpose();
    // d(normed) = gain * (c / r - x (x.c) / (D r^3)); through gate and up, the second term is a
    // multiple of the pre-activation itself: (x * gain) W^T = r * pre.
    Matrix scaled = contribution.array().rowwise() * l.post_norm.transpose().array();
    const Matrix d_gate_first = scaled * l.gate.transpose();
    const Matrix d_up_first = scaled * l.up.transpose();
    Eigen::VectorXf along(T);  // (x . c) / (D r^2)
    for (int64_t t = 0; t < T; ++t)
      along(t) = tr.x_mlp.row(t).dot(contribution.row(t)) / (static_cast<float>(D) * r(t) * r(t));
      // Each neuron's sum over tokens is independent of the others': split the neurons over threads.
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < I; ++n) {
      double sum = 0;
      for (int64_t t = 0; t < T; ++t) {
        const float dg = d_gate_first(t, n) / r(t) - along(t) * tr.gate(t, n);
        const float du = d_up_first(t, n) / r(t) - along(t) * tr.up(t, n);
        const double change = dsilu(t, n) * tr.up(t, n) * dg + silu(t, n) * du;
        sum += change * change;
      }
      up[static_cast<size_t>(g * I + n)] += sum * down_norm2(n);
    }
  }
}

void add_down(const Checkpoint& c, const LayerWeights& l, const LayerWeights& next, const LayerTrace& tr,
              const LayerTrace& next_tr, const std::vector<Eigen::VectorXf>& b_norm2, std::vector<double>& down) {
  const model::ArchSpec& a = c.arch;
  const int64_t T = tr.act.rows(), D = a.hidden, I = a.intermediate, G = a.kv_heads;
  const Matrix& x = next_tr.x_attn;
  const Eigen::VectorXf r = row_rms(x, c.rms_eps);
  const Matrix x_gain = x.array().rowwise() * next.input_norm.transpose().array();
  const Matrix x_down = x * l.down;  // [T, I]: x . down_proj[:, n]
  for (int64_t g = 0; g < G; ++g) {
    const Matrix w = group_qkv(next, a, g);
    const Matrix projected = x_gain * w.transpose();  // [T, R]: A(t) = W (gain * x)
    // A(t) . B[:, n] with B = W diag(gain) down_proj.
    const Matrix back = (projected * w).array().rowwise() * next.input_norm.transpose().array();
    const Matrix cross = back * l.down;  // [T, I]
    const Eigen::VectorXf a2 = projected.rowwise().squaredNorm();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < I; ++n) {
      double sum = 0;
      for (int64_t t = 0; t < T; ++t) {
        // || act (B[:, n] / r - s A(t)) ||^2 with s = (x . d_n) / (D r^3).
        const double r1 = r(t), s = x_down(t, n) / (static_cast<double>(D) * r1 * r1 * r1);
        const double value = b_norm2[static_cast<size_t>(g)](n) / (r1 * r1) - 2 * s * cross(t, n) / r1 + s * s * a2(t);
        const double act = tr.act(t, n);
        sum += act * act * value;
      }
      down[static_cast<size_t>(n * G + g)] += sum;
    }
  }
}

}  // namespace

std::vector<int> read_calibration_tokens(const std::string& path, bool text, int64_t vocab) {
  const std::string bytes = read_input_file(path, "calibration tokens", model::kMaxTextFileBytes);
  const std::string file = echo_path(path);
  std::vector<uint32_t> ids;
  if (text) {
    for (unsigned char b : bytes) ids.push_back(b);
  } else {
    if (bytes.size() % 4 != 0) {
      throw InputError(file + ": " + std::to_string(bytes.size()) +
                       " bytes is not a whole number of uint32 token ids (for a text file, pass --text)");
    }
    for (size_t i = 0; i < bytes.size(); i += 4) {
      uint32_t id = 0;
      for (int k = 3; k >= 0; --k) id = (id << 8) | static_cast<unsigned char>(bytes[i + static_cast<size_t>(k)]);
      ids.push_back(id);
    }
  }
  std::vector<int> tokens;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab) {  // compared before narrowing: an id of 2^31 or more is no negative token
      throw InputError(file + ": token " + std::to_string(i) + " is " + std::to_string(ids[i]) +
                       ", outside the model's vocabulary of " + std::to_string(vocab));
    }
    tokens.push_back(static_cast<int>(ids[i]));
  }
  return tokens;
}

AffinityTables affinity_statistics(const Checkpoint& c, const std::vector<int>& tokens, const AffinityOptions& o) {
  const model::ArchSpec& a = c.arch;
  const int64_t L = a.layers, G = a.kv_heads, I = a.intermediate;
  int64_t usable = o.max_tokens > 0 ? std::min<int64_t>(o.max_tokens, static_cast<int64_t>(tokens.size()))
                                    : static_cast<int64_t>(tokens.size());
  usable -= usable % o.sequence_length;
  if (usable <= 0) {
    throw InputError("the calibration holds " + std::to_string(tokens.size()) + " tokens, fewer than one sequence of " +
                     std::to_string(o.sequence_length));
  }
  AffinityTables t{static_cast<int>(L), static_cast<int>(G), static_cast<int>(I), {}, {}};
  t.up.assign(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(G * I), 0.0));
  t.down.assign(static_cast<size_t>(L - 1), std::vector<double>(static_cast<size_t>(I * G), 0.0));
  // ||B[:, n]||^2 per layer and group, B = W_qkv(g) diag(gain) down_proj: weights only, once.
  std::vector<std::vector<Eigen::VectorXf>> b_norm2(static_cast<size_t>(L));
  for (int64_t i = 0; i + 1 < L; ++i) {
    const LayerWeights& next = c.layers[static_cast<size_t>(i + 1)];
    for (int64_t g = 0; g < G; ++g) {
      const Matrix w = group_qkv(next, a, g).array().rowwise() * next.input_norm.transpose().array();
      b_norm2[static_cast<size_t>(i)].push_back(
          (w * c.layers[static_cast<size_t>(i)].down).colwise().squaredNorm().transpose());
    }
  }
  std::vector<LayerTrace> traces;
  for (int64_t start = 0; start < usable; start += o.sequence_length) {
    const std::vector<int> sequence(tokens.begin() + start, tokens.begin() + start + o.sequence_length);
    forward(c, sequence, &traces, false);
    for (int64_t i = 0; i < L; ++i) {
      const LayerWeights& l = c.layers[static_cast<size_t>(i)];
      add_up(c, l, traces[static_cast<size_t>(i)], t.up[static_cast<size_t>(i)]);
      if (i + 1 < L) {
        add_down(c, l, c.layers[static_cast<size_t>(i + 1)], traces[static_cast<size_t>(i)],
                 traces[static_cast<size_t>(i + 1)], b_norm2[static_cast<size_t>(i)], t.down[static_cast<size_t>(i)]);
      }
    }
  }
  for (auto* tables : {&t.up, &t.down}) {
    for (auto& table : *tables) {
      for (double& v : table) v = std::max(0.0, v / static_cast<double>(usable));  // rounding can dip below 0
    }
  }
  return t;
}

}  // namespace tpsim::shard
