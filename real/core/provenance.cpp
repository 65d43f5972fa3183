// Host provenance and version formatting.
#include "real/core/provenance.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <optional>

#include "base/device_names.hpp"

#ifndef TPSIM_VERSION
#define TPSIM_VERSION "unknown"
#endif
#ifndef TPSIM_GIT_REVISION
#define TPSIM_GIT_REVISION "unknown"
#endif

namespace tpsim::real {

Provenance host_provenance(const std::vector<std::string>& arguments) {
  Provenance p;
  p.tool_version = TPSIM_VERSION;
  p.git_revision = TPSIM_GIT_REVISION;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) p.host = host;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32] = {};
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  p.measured_at = stamp;
  p.arguments = arguments;
  return p;
}

nlohmann::ordered_json to_json(const Provenance& p) {
  nlohmann::ordered_json j;
  j["tool"] = p.tool;
  j["tool_version"] = p.tool_version;
  j["git_revision"] = p.git_revision;
  j["host"] = p.host;
  j["measured_at"] = p.measured_at;
  j["arguments"] = p.arguments;
  j["ranks"] = p.ranks;
  const DeviceFacts& d = p.device;
  j["device"] = d.name;
  j["sm_count"] = d.sm_count;
  j["sm_clock_mhz"] = d.sm_clock_mhz;
  j["memory_clock_mhz"] = d.memory_clock_mhz;
  j["l2_bytes"] = d.l2_bytes;
  j["memory_bytes"] = d.memory_bytes;
  j["compute_capability"] = d.compute_capability;
  j["driver_cuda"] = d.driver_version;
  j["cuda_runtime"] = d.runtime_version;
  j["cublas"] = d.cublas_version;
  j["nccl"] = d.nccl_version;
  return j;
}

std::string cuda_version_text(int code) {
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

std::string cublas_version_text(int64_t code) {
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." + std::to_string(code % 100);
}

std::string nccl_version_text(int code) {
  if (code >= 20900) {
    return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." + std::to_string(code % 100);
  }
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 100) + "." + std::to_string(code % 100);
}

std::string gpu_preset_for_device(const std::string& device_name) {
  if (std::optional<std::string> preset = calibrate::gpu_preset_of_device(device_name)) return *preset;
  std::string slug;
  for (char c : device_name)
    slug += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  return slug;
}

}  // namespace tpsim::real
