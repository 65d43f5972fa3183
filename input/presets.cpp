// Looks up embedded preset files by category and name.
#include "input/presets.hpp"

namespace tpsim::model {

std::optional<std::string_view> find_preset(std::string_view category, std::string_view name,
                                            std::string_view extension) {
  const std::string wanted = std::string(category) + "/" + std::string(name) + "." + std::string(extension);
  for (const auto& preset : embedded_presets()) {
    if (preset.path == wanted) return preset.content;
  }
  return std::nullopt;
}

std::vector<std::string> preset_names(std::string_view category) {
  std::vector<std::string> names;
  const std::string prefix = std::string(category) + "/";
  for (const auto& preset : embedded_presets()) {
    if (!preset.path.starts_with(prefix)) continue;
    std::string_view stem = preset.path.substr(prefix.size());
    stem = stem.substr(0, stem.rfind('.'));
    names.emplace_back(stem);
  }
  return names;
}

}  // namespace tpsim::model
