// Preset files (models, GPUs, profiles) compiled into the binary from scenarios/presets.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/names.hpp"

namespace tpsim::model {

struct EmbeddedPreset {
  std::string_view path;     // relative to scenarios/presets, e.g. "models/llama-3.1-8b.json"
  std::string_view content;  // the file's bytes
};

// Every embedded preset, sorted by path (generated at configure time).
const std::vector<EmbeddedPreset>& embedded_presets();

// The content of presets/<category>/<name>.<extension>, if it exists.
std::optional<std::string_view> find_preset(std::string_view category, std::string_view name,
                                            std::string_view extension);

// Names (file stems) of the presets in a category, sorted.
std::vector<std::string> preset_names(std::string_view category);

}  // namespace tpsim::model
