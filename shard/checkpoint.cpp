// Reading and writing decoder checkpoints by their Hugging Face tensor names.
#include "shard/checkpoint.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/json_keys.hpp"
#include "base/limits.hpp"
#include "input/model/hf_config.hpp"
#include "shard/safetensors.hpp"

namespace tpsim::shard {
namespace {

namespace fs = std::filesystem;

// All tensors of the checkpoint, from one file or from the shards of an index.
// The shard files an index's weight_map names.
std::set<std::string> indexed_files(const std::string& index) {
  std::set<std::string> files;
  try {
    const std::string text = read_input_file(index, "index", model::kMaxTextFileBytes);
    const nlohmann::json j = nlohmann::json::parse(text);
    model::refuse_duplicate_keys(text, echo_path(index));
    for (const auto& [name, file] : j.at("weight_map").items()) files.insert(file.get<std::string>());
  } catch (const nlohmann::json::exception& error) {
    throw InputError(echo_path(index) + ": not an index of safetensors files, {\"weight_map\": {tensor: file}} (" +
                     error.what() + ")");
  }
  return files;
}

SafetensorsFile read_weights(const std::string& dir) {
  const fs::path single = fs::path(dir) / "model.safetensors";
  if (is_regular_file(single.string())) return read_safetensors(single.string());
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!is_regular_file(index.string())) {
    throw InputError(echo_path(dir) + ": no model.safetensors or model.safetensors.index.json");
  }
  SafetensorsFile all;
  for (const std::string& file : indexed_files(index.string())) {
    SafetensorsFile part = read_safetensors((fs::path(dir) / file).string());
    for (auto& [name, tensor] : part.tensors) all.tensors[name] = std::move(tensor);
  }
  return all;
}

class WeightReader {
 public:
  WeightReader(const SafetensorsFile& file, std::string origin) : file_(file), origin_(std::move(origin)) {}

  Matrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const Tensor& t = shaped(name, {rows, cols});
    return Eigen::Map<const Matrix>(t.values.data(), rows, cols);
  }
  Vector vector(const std::string& name, int64_t size) const {
    const Tensor& t = shaped(name, {size});
    return Eigen::Map<const Vector>(t.values.data(), size);
  }
  bool has(const std::string& name) const { return file_.tensors.count(name) != 0; }

 private:
  const Tensor& shaped(const std::string& name, const std::vector<int64_t>& shape) const {
    const Tensor& t = file_.at(name, origin_);
    if (t.shape != shape) {
      auto text = [](const std::vector<int64_t>& s) {
        std::string out;
        for (int64_t d : s) out += (out.empty() ? "" : ", ") + std::to_string(d);
        return "[" + out + "]";
      };
      throw InputError(origin_ + ": tensor '" + name + "' has shape " + text(t.shape) + ", the config implies " +
                       text(shape));
    }
    return t;
  }

  const SafetensorsFile& file_;
  std::string origin_;
};

// The key's value, or `fallback` when it is absent or null (load_hf_config_file checked its type).
template <typename T>
T value_or(const nlohmann::json& j, const char* key, T fallback) {
  return j.contains(key) && !j.at(key).is_null() ? j.at(key).get<T>() : fallback;
}

// Whether the layer is the Llama layer the shard forward runs and whose tensors it permutes: a GPT-style or
// windowed model_type (docs/model.md, "Model types") has other tensors (biases, LayerNorm biases, Gemma's extra norms)
// and another function (GeLU, parallel residual, a window), which a permuted checkpoint would drop or change.
bool plain_llama_layer(const model::ArchSpec& a) {
  const model::LayerStyle plain;
  const model::LayerStyle& s = a.style;
  return s.norm == plain.norm && s.mlp == plain.mlp && !s.linear_bias && !s.lm_head_bias && !s.parallel_residual &&
         s.norms_per_layer == plain.norms_per_layer && s.learned_positions == 0 && s.window == 0;
}

void read_extras(const std::string& config_path, Checkpoint& c) {
  const std::string text = read_input_file(config_path, "config.json", model::kMaxTextFileBytes);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(echo_path(config_path) + ": not JSON");
  model::refuse_duplicate_keys(text, echo_path(config_path));
  if (!plain_llama_layer(c.arch)) {
    const size_t at = text.find("\"model_type\"");
    const model::TextPosition pos = at == std::string::npos ? model::TextPosition{} : model::position_of_byte(text, at);
    throw InputError(format_location(echo_path(config_path), pos.line0, pos.col0),
                     "tpsim shard permutes Llama-style layers (RMSNorm, SwiGLU, no biases beyond Qwen2's q/k/v, full "
                     "attention); model_type \"" +
                         c.arch.model_type +
                         "\" as this config sets it is not one (tpsim run models it: docs/model.md, \"Model types\")");
  }
  c.rms_eps = value_or(j, "rms_norm_eps", 1e-6);
  c.rope_theta = value_or(j, "rope_theta", 10000.0);
  c.tied_embeddings = value_or(j, "tie_word_embeddings", false);
}

}  // namespace

Checkpoint read_checkpoint(const std::string& dir) {
  const std::string config = (fs::path(dir) / "config.json").string();
  Checkpoint c;
  c.arch = model::load_hf_config_file(config);
  read_extras(config, c);
  const SafetensorsFile file = read_weights(dir);
  const WeightReader w(file, dir);
  const model::ArchSpec& a = c.arch;
  const int64_t D = a.hidden, q = a.heads * a.head_dim, kv = a.kv_heads * a.head_dim, I = a.intermediate;
  c.embed = w.matrix("model.embed_tokens.weight", a.vocab, D);
  c.lm_head = c.tied_embeddings || !w.has("lm_head.weight") ? c.embed : w.matrix("lm_head.weight", a.vocab, D);
  c.final_norm = w.vector("model.norm.weight", D);
  for (int64_t i = 0; i < a.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.q = w.matrix(p + "self_attn.q_proj.weight", q, D);
    l.k = w.matrix(p + "self_attn.k_proj.weight", kv, D);
    l.v = w.matrix(p + "self_attn.v_proj.weight", kv, D);
    l.o = w.matrix(p + "self_attn.o_proj.weight", D, q);
    l.gate = w.matrix(p + "mlp.gate_proj.weight", I, D);
    l.up = w.matrix(p + "mlp.up_proj.weight", I, D);
    l.down = w.matrix(p + "mlp.down_proj.weight", D, I);
    l.input_norm = w.vector(p + "input_layernorm.weight", D);
    l.post_norm = w.vector(p + "post_attention_layernorm.weight", D);
    if (a.qk_norm) {
      l.q_norm = w.vector(p + "self_attn.q_norm.weight", a.head_dim);
      l.k_norm = w.vector(p + "self_attn.k_norm.weight", a.head_dim);
    }
    if (a.qkv_bias) {
      l.q_bias = w.vector(p + "self_attn.q_proj.bias", q);
      l.k_bias = w.vector(p + "self_attn.k_proj.bias", kv);
      l.v_bias = w.vector(p + "self_attn.v_proj.bias", kv);
    }
    c.layers.push_back(std::move(l));
  }
  return c;
}

void write_checkpoint(const std::string& dir, const Checkpoint& c, const std::string& config_source) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw InputError(dir + ": cannot create the folder: " + error.message());
  SafetensorsFile f;
  auto put = [&f](const std::string& name, const auto& m, std::vector<int64_t> shape) {
    f.tensors[name] = Tensor{std::move(shape), std::vector<float>(m.data(), m.data() + m.size())};
  };
  const model::ArchSpec& a = c.arch;
  put("model.embed_tokens.weight", c.embed, {c.embed.rows(), c.embed.cols()});
  if (!c.tied_embeddings) put("lm_head.weight", c.lm_head, {c.lm_head.rows(), c.lm_head.cols()});
  put("model.norm.weight", c.final_norm, {c.final_norm.size()});
  for (size_t i = 0; i < c.layers.size(); ++i) {
    const LayerWeights& l = c.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    for (const auto& [name, m] :
         std::vector<std::pair<std::string, const Matrix*>>{{"self_attn.q_proj.weight", &l.q},
                                                            {"self_attn.k_proj.weight", &l.k},
                                                            {"self_attn.v_proj.weight", &l.v},
                                                            {"self_attn.o_proj.weight", &l.o},
                                                            {"mlp.gate_proj.weight", &l.gate},
                                                            {"mlp.up_proj.weight", &l.up},
                                                            {"mlp.down_proj.weight", &l.down}}) {
      put(p + name, *m, {m->rows(), m->cols()});
    }
    put(p + "input_layernorm.weight", l.input_norm, {l.input_norm.size()});
    put(p + "post_attention_layernorm.weight", l.post_norm, {l.post_norm.size()});
    if (l.q_norm) put(p + "self_attn.q_norm.weight", *l.q_norm, {a.head_dim});
    if (l.k_norm) put(p + "self_attn.k_norm.weight", *l.k_norm, {a.head_dim});
    if (l.q_bias) put(p + "self_attn.q_proj.bias", *l.q_bias, {l.q_bias->size()});
    if (l.k_bias) put(p + "self_attn.k_proj.bias", *l.k_bias, {l.k_bias->size()});
    if (l.v_bias) put(p + "self_attn.v_proj.bias", *l.v_bias, {l.v_bias->size()});
  }
  fs::copy_file(config_source, fs::path(dir) / "config.json", fs::copy_options::overwrite_existing, error);
  if (error) throw InputError(dir + "/config.json: cannot copy " + config_source + ": " + error.message());
  write_safetensors((fs::path(dir) / "model.safetensors").string(), f);
}

}  // namespace tpsim::shard
