// Reads what the GPT-style and sliding-window model_types change in the Llama layer (gpt2, gpt_bigcode, gpt_neox,
// starcoder2, falcon, phi; mistral's sliding_window, gemma2 and gemma3_text): their key names, defaults and flags,
// each taken from transformers' configuration_<type>.py and modeling_<type>.py (cited where read).
#pragma once

#include <map>
#include <string>

#include "input/model/arch_reader.hpp"

namespace tpsim::model {

// The config keys model_type `type` spells its own way (GPT-2's n_embd for hidden_size, ...), by canonical name.
const std::map<std::string, std::string>& key_aliases(const std::string& type);

// A source that answers a canonical key (hidden_size) from its alias (n_embd) where the config uses the alias.
class AliasedSource final : public ArchSource {
 public:
  AliasedSource(const ArchSource& inner, const std::map<std::string, std::string>& aliases)
      : inner_(inner), aliases_(aliases) {}
  bool has(const std::string& key) const override { return inner_.has(name(key)); }
  std::optional<int64_t> integer(const std::string& key) const override { return inner_.integer(name(key)); }
  std::optional<std::string> text(const std::string& key) const override { return inner_.text(name(key)); }
  std::optional<bool> flag(const std::string& key) const override { return inner_.flag(name(key)); }
  std::optional<double> number(const std::string& key) const override { return inner_.number(name(key)); }
  std::optional<std::vector<std::string>> text_list(const std::string& key) const override {
    return inner_.text_list(name(key));
  }
  std::optional<std::vector<int64_t>> integer_list(const std::string& key) const override {
    return inner_.integer_list(name(key));
  }
  std::string shown(const std::string& key) const override { return inner_.shown(name(key)); }
  InputError error_at(const std::string& key, const std::string& what) const override {
    return inner_.error_at(name(key), what);
  }

 private:
  // The key as the config spells it: the canonical name where present, else its alias.
  std::string name(const std::string& key) const;
  const ArchSource& inner_;
  const std::map<std::string, std::string>& aliases_;
};

// Whether model_type `type` has a plain FFN of 4 x hidden_size when the config gives no width (gpt2's n_inner
// null, falcon's ffn_hidden_size absent).
bool default_ffn_is_4h(const std::string& type);
// Whether model_type `type` ties its LM head to the embedding when tie_word_embeddings is absent.
bool ties_by_default(const std::string& type);
// Whether model_type `type` reads config key `key` (its window, layer kinds, biases), for hf_keys' refusals.
bool style_reads(const std::string& type, const std::string& key);

// Sets arch.style, and the KV heads and rotary fraction where the model_type decides them, from the config;
// refuses an unmodelled combination (Falcon's ALiBi, Phi's QK LayerNorm, ...) located at its key.
void read_model_style(const ArchSource& source, ArchSpec& arch);

}  // namespace tpsim::model
