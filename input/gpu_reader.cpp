// GPU presets and inline GPU mappings: typed reading with unit conversion at input (TFLOP/s, GB/s to SI).
#include "input/gpu_reader.hpp"

#include <cmath>
#include <map>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "input/presets.hpp"
#include "sim/cost/power_limit.hpp"

namespace tpsim::sim {
namespace {

// Far above any GPU (B200: 148 SMs) and any NVLink domain (NVL72) in one node.
constexpr int kMaxSms = 1024;
constexpr int kMaxGpusPerNode = 1024;

// board_power_W and its default power_limit_W, and the HBM's energy per bit. Powers: from a few watts (the limit must
// clear the idle draw) to the largest board made (GB200's 1200 W) with room to spare.
void read_power(const model::YamlReader& in, const YAML::Node& node, GpuSpec& gpu) {
  if (node["board_power_W"]) {
    gpu.board_power_W = in.number_in(node["board_power_W"], "gpu.board_power_W", 1, model::kMaxPowerW);
  }
  if (const YAML::Node limit = node["power_limit_W"]) {
    if (gpu.board_power_W <= 0) in.fail(limit, "gpu.power_limit_W needs the board's power, gpu.board_power_W");
    gpu.power_limit_W = in.number_in(limit, "gpu.power_limit_W", 1, gpu.board_power_W);
  } else {
    gpu.power_limit_W = gpu.board_power_W;
  }
  if (node["hbm_pJ_per_bit"]) {
    gpu.hbm_pJ_per_bit = in.number_in(node["hbm_pJ_per_bit"], "gpu.hbm_pJ_per_bit", 0.1, kMaxEnergyPjPerBit);
  }
  if (node["sustained_gemm_ratio"]) {
    gpu.sustained_gemm_ratio = in.number_in(node["sustained_gemm_ratio"], "gpu.sustained_gemm_ratio", 0.1, 1);
  }
}

}  // namespace

RuntimeMemorySpec read_runtime_memory(const model::YamlReader& in, const YAML::Node& node) {
  const std::vector<std::string> keys = {"context_GB",           "allocator_reserve", "cublas_workspace_MiB",
                                         "nccl_communicator_GB", "nccl_peer_GB",      "source"};
  in.expect_map(node, "gpu.runtime_memory", keys);
  for (const std::string& key : keys) in.require(node, key, "gpu.runtime_memory");
  const auto number = [&](const char* key, double high) {
    return in.number_in(node[key], std::string("gpu.runtime_memory.") + key, 0, high);
  };
  RuntimeMemorySpec spec;
  spec.given = true;
  spec.context_bytes = number("context_GB", 64) * 1e9;
  spec.allocator_reserve = number("allocator_reserve", 4);
  spec.workspace_bytes = number("cublas_workspace_MiB", 4096) * 1024 * 1024;
  spec.nccl_communicator_bytes = number("nccl_communicator_GB", 64) * 1e9;
  spec.nccl_peer_bytes = number("nccl_peer_GB", 64) * 1e9;
  spec.source = in.string(node["source"], "gpu.runtime_memory.source");
  return spec;
}

GpuSpec read_gpu_spec(const model::YamlReader& in, const YAML::Node& node) {
  in.expect_map(node, "gpu",
                {"name", "peak_bf16_tflops", "peak_fp8_tflops", "hbm_GBps", "hbm_GB", "sm_count", "nvlink_GBps",
                 "pcie_GBps", "gpus_per_node", "switch_reduction", "compute_capability", "nvswitch", "board_power_W",
                 "power_limit_W", "hbm_pJ_per_bit", "sustained_gemm_ratio", "hbm_usable_GiB", "runtime_memory"});
  for (const char* key : {"name", "peak_bf16_tflops", "hbm_GBps", "sm_count", "nvlink_GBps"})
    in.require(node, key, "gpu");
  // Physical ranges: a rate far outside them is a typo, and near 0 it overflows the simulated clock.
  const auto tflops = [&](const char* key) {
    return in.number_in(node[key], std::string("gpu.") + key, 0.01, 1e5) * 1e12;
  };
  const auto GBps = [&](const char* key) { return in.number_in(node[key], std::string("gpu.") + key, 0.1, 1e5) * 1e9; };
  GpuSpec gpu;
  gpu.name = in.string(node["name"], "gpu.name");
  gpu.peak_bf16_flops = tflops("peak_bf16_tflops");
  gpu.peak_fp8_flops = node["peak_fp8_tflops"] ? tflops("peak_fp8_tflops") : 0.0;
  gpu.hbm_Bps = GBps("hbm_GBps");
  gpu.hbm_bytes = node["hbm_GB"] ? in.number_in(node["hbm_GB"], "gpu.hbm_GB", 0.001, 1e5) * 1e9 : 0.0;
  if (const YAML::Node usable = node["hbm_usable_GiB"]) {
    if (gpu.hbm_bytes <= 0) in.fail(usable, "gpu.hbm_usable_GiB needs the HBM as sold, gpu.hbm_GB");
    // Parts sold as "80 GB" carry 80 GiB: what CUDA sees may pass the sold figure, by less than 10%.
    gpu.hbm_usable_bytes = in.number_in(usable, "gpu.hbm_usable_GiB", 0.001, 1.1 * gpu.hbm_bytes / kGiB) * kGiB;
  }
  if (node["runtime_memory"]) gpu.runtime_memory = read_runtime_memory(in, node["runtime_memory"]);
  gpu.sm_count = in.count(node["sm_count"], "gpu.sm_count", kMaxSms);
  gpu.nvlink_Bps = GBps("nvlink_GBps");
  gpu.pcie_Bps = node["pcie_GBps"] ? GBps("pcie_GBps") : 0.0;
  gpu.gpus_per_node = node["gpus_per_node"] ? in.count(node["gpus_per_node"], "gpu.gpus_per_node", kMaxGpusPerNode) : 8;
  if (node["switch_reduction"]) gpu.switch_reduction = in.boolean(node["switch_reduction"], "gpu.switch_reduction");
  if (const YAML::Node cc = node["compute_capability"]) {
    const double value = in.positive_number(cc, "gpu.compute_capability");
    if (value < 7.0 || value >= 20.0) {
      in.fail(cc,
              "gpu.compute_capability " + cc.Scalar() + ": a CUDA compute capability from 7.0 (e.g. 8.0, 9.0, 10.0)");
    }
    gpu.compute_capability = static_cast<int>(std::lround(value * 10));
  }
  if (node["nvswitch"]) gpu.nvswitch = in.boolean(node["nvswitch"], "gpu.nvswitch");
  read_power(in, node, gpu);
  return gpu;
}

std::shared_ptr<const model::InlineGpu> read_inline_gpu(const model::YamlReader& reader, const YAML::Node& node) {
  auto out = std::make_shared<model::InlineGpu>();
  try {
    out->spec = read_gpu_spec(reader, node);
  } catch (...) {
    out->error = std::current_exception();
  }
  return out;
}

GpuSpec resolve_gpu(const model::Scenario& scenario) {
  if (const auto& inline_gpu = scenario.gpu.inline_gpu) {
    if (inline_gpu->error) std::rethrow_exception(inline_gpu->error);
    return inline_gpu->spec;
  }
  const std::string& name = scenario.gpu.value;
  // Parsed once per process: a plan resolves its GPU for each of its candidates.
  static std::map<std::string, GpuSpec> parsed;
  if (const auto it = parsed.find(name); it != parsed.end()) return it->second;
  const auto text = model::find_preset("gpus", name, "yaml");
  if (!text) {
    fail_at(scenario.gpu.at, "unknown GPU preset '" + name + "'; valid: " +
                                 model::join_names(model::preset_names("gpus")) + ", or an inline mapping");
  }
  const model::YamlReader preset("presets/gpus/" + name + ".yaml");
  return parsed.emplace(name, read_gpu_spec(preset, preset.parse_text(std::string(*text)))).first->second;
}

}  // namespace tpsim::sim
