// Reads an ArchSpec from a model config's keys (a config.json or a scenario's inline mapping): the
// model_type allow-list, the shape keys with their types and limits, and the rules between them.
// Where the keys come from and how an error is located is the ArchSource's business.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/input_error.hpp"
#include "model/layers/arch_spec.hpp"

namespace tpsim::model {

// The Hugging Face model_types whose layers tpsim builds: llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe,
// mixtral, qwen3_next, deepseek_v2/v3, and the GPT-style and windowed ones (gpt2, gpt_bigcode, gpt_neox,
// starcoder2, falcon, phi, gemma2, gemma3_text).
const std::vector<std::string>& modelled_model_types();

// Whether model_type `name` reads config key `key` (its experts', shared expert's or linear-attention keys), which
// the refusal of unmodelled keys (hf_keys.hpp) then leaves to the reader.
bool model_type_reads(const std::string& name, const std::string& key);

// A model config's keys with typed, located access. A key whose value is null counts as absent.
class ArchSource {
 public:
  virtual ~ArchSource() = default;
  virtual bool has(const std::string& key) const = 0;
  // The value as an integer (saturated to the int64 range), or nothing when it is not an integer.
  virtual std::optional<int64_t> integer(const std::string& key) const = 0;
  // The value as text, or nothing when it is not a string.
  virtual std::optional<std::string> text(const std::string& key) const = 0;
  // The value as true or false, or nothing when it is not a boolean.
  virtual std::optional<bool> flag(const std::string& key) const = 0;
  // The value as a finite number, or nothing when it is not one.
  virtual std::optional<double> number(const std::string& key) const = 0;
  // The value as a list of strings, or nothing when it is not one.
  virtual std::optional<std::vector<std::string>> text_list(const std::string& key) const = 0;
  // The value as a list of integers, or nothing when it is not one.
  virtual std::optional<std::vector<int64_t>> integer_list(const std::string& key) const = 0;
  // The value as the user wrote it, for messages.
  virtual std::string shown(const std::string& key) const = 0;
  // The error located at the key's value (at the whole config when the key is absent).
  virtual InputError error_at(const std::string& key, const std::string& what) const = 0;
  // Throws it (not virtual: GCC does not take a virtual call's [[noreturn]] as given).
  [[noreturn]] void fail(const std::string& key, const std::string& what) const { throw error_at(key, what); }
};

// The integer at `key`, located and refused unless from 1 to `limit`.
int64_t read_positive_int(const ArchSource& source, const std::string& key, int64_t limit);
// Learned absolute positions tpsim accepts (GPT-2: 1024, StarCoder: 8192).
inline constexpr int64_t kMaxPositions = int64_t{1} << 24;

// What an absent model_type means: a config.json must name it (transformers refuses one that does
// not); a scenario's inline mapping of shapes is a Llama-style layer.
enum class MissingModelType { kRefuse, kLlama };

// model_type, the shape keys, head_dim and the KV grouping, the flags the model_type implies
// (QK-norm, q/k/v biases), and an MoE model_type's experts. Leaves name and source to the caller.
ArchSpec read_arch(const ArchSource& source, MissingModelType missing);

}  // namespace tpsim::model
