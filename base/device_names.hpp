// Which tpsim GPU preset a CUDA device name is ("NVIDIA H100 80GB HBM3" is h100-sxm), for nccl-tests logs
// and tpsim-real records. Only the parts a preset describes map; PCIe and NVL cards, other memory sizes
// and unknown GPUs do not.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tpsim::calibrate {

// The preset of a device name as CUDA reports it, or nullopt when no preset describes that part.
std::optional<std::string> gpu_preset_of_device(const std::string& device_name);

// The device names each preset stands for, for messages ("h100-sxm: NVIDIA H100 80GB HBM3").
const std::vector<std::pair<std::string, std::string>>& device_name_examples();

}  // namespace tpsim::calibrate
