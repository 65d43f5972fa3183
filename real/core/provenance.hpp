// Where a measurement came from: the tool, its revision and arguments, the host, and (filled in by the
// CUDA side) the device, its clocks and the driver, CUDA, cuBLAS and NCCL versions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpsim::real {

struct DeviceFacts {
  std::string name;  // as the driver reports it, e.g. "NVIDIA H200"
  int sm_count = 0;
  int sm_clock_mhz = 0;      // maximum SM clock
  int memory_clock_mhz = 0;  // maximum memory clock
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  std::string compute_capability;  // "9.0"
  std::string driver_version;      // CUDA version the driver supports, "13.0"
  std::string runtime_version;     // CUDA runtime, "13.0"
  std::string cublas_version;      // "13.1.0"
  std::string nccl_version;        // "2.28.9"
};

struct Provenance {
  std::string tool = "tpsim-real";
  std::string tool_version;
  std::string git_revision;
  std::string host;
  std::string measured_at;  // UTC, ISO 8601
  std::vector<std::string> arguments;
  DeviceFacts device;
  int ranks = 1;  // processes x local GPUs taking part
};

// The host side: version, revision, host name, time, and the exact arguments.
Provenance host_provenance(const std::vector<std::string>& arguments);

nlohmann::ordered_json to_json(const Provenance& provenance);

// Version codes as the libraries return them: CUDA 13000 -> "13.0"; cuBLAS 130100 -> "13.1.0";
// NCCL 22809 -> "2.28.9" (2.9 and later: major*10000 + minor*100 + patch; before: major*1000 + minor*100 + patch).
std::string cuda_version_text(int code);
std::string cublas_version_text(int64_t code);
std::string nccl_version_text(int code);

// The tpsim GPU preset a device name stands for ("NVIDIA H200" -> "h200-sxm", "NVIDIA H100 80GB HBM3" ->
// "h100-sxm"); otherwise the name in lower case with spaces as dashes.
std::string gpu_preset_for_device(const std::string& device_name);

}  // namespace tpsim::real
