// Reads a Hugging Face config.json (or an embedded model preset in the same format) into an ArchSpec;
// refuses model_types and architecture keys tpsim does not model (docs/scenarios.md, "model").
#pragma once

#include <string>
#include <string_view>

#include "model/layers/arch_spec.hpp"

namespace tpsim::model {

// Parses config.json text; `origin` names the file in error messages.
ArchSpec parse_hf_config(std::string_view json_text, const std::string& origin, const std::string& name);

// Reads and parses a config.json file.
ArchSpec load_hf_config_file(const std::string& path);

// A model preset by name (llama-3.1-8b, qwen3-8b, ...); throws listing the valid names.
ArchSpec load_model_preset(const std::string& name);

}  // namespace tpsim::model
