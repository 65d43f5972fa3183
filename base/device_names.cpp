// Device names as `nvidia-smi` and cudaGetDeviceProperties report them, matched by their model tokens.
#include "base/device_names.hpp"

#include <algorithm>
#include <cctype>

namespace tpsim::calibrate {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

std::optional<std::string> gpu_preset_of_device(const std::string& device_name) {
  const std::string name = lower(device_name);
  const auto has = [&name](const char* part) { return name.find(part) != std::string::npos; };
  if (has("h100") && has("pcie")) return "h100-pcie";  // "NVIDIA H100 PCIe"
  // Other form factors of the same chips have other power, clocks, memory or links: no preset.
  if (has("pcie") || has(" nvl") || has("gh200") || has("gb200")) return std::nullopt;
  if (has("h20") && !has("h200")) return "h20";       // "NVIDIA H20"
  if (has("h100") && has("80gb")) return "h100-sxm";  // "NVIDIA H100 80GB HBM3", the SXM5 part
  if (has("h200")) return "h200-sxm";                 // "NVIDIA H200"
  if (has("h800")) return "h800-sxm";                 // "NVIDIA H800"
  if (has("b200")) return "b200";                     // "NVIDIA B200"
  if (has("a100-sxm4-80gb")) return "a100-sxm";       // "NVIDIA A100-SXM4-80GB"
  if (has("a100-sxm4-40gb")) return "a100-sxm-40gb";  // "NVIDIA A100-SXM4-40GB"
  return std::nullopt;
}

const std::vector<std::pair<std::string, std::string>>& device_name_examples() {
  static const std::vector<std::pair<std::string, std::string>> examples = {
      {"h100-sxm", "NVIDIA H100 80GB HBM3"}, {"h200-sxm", "NVIDIA H200"},
      {"h800-sxm", "NVIDIA H800"},           {"b200", "NVIDIA B200"},
      {"a100-sxm", "NVIDIA A100-SXM4-80GB"}, {"a100-sxm-40gb", "NVIDIA A100-SXM4-40GB"},
      {"h100-pcie", "NVIDIA H100 PCIe"},     {"h20", "NVIDIA H20"}};
  return examples;
}

}  // namespace tpsim::calibrate
