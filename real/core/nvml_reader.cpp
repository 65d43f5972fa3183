// dlopen / dlsym of the NVML entry points, and one reading per call.
#include "real/core/nvml_reader.hpp"

#include <dlfcn.h>

namespace tpsim::real {

// NVML's types and values as its API reference documents them (nvml.h).
namespace {
using NvmlReturn = int;  // nvmlReturn_t: NVML_SUCCESS = 0
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;         // nvmlClockType_t NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;  // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
}  // namespace

struct NvmlReader::Api {
  NvmlReturn (*init)() = nullptr;                                          // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;                                      // nvmlShutdown
  const char* (*error_string)(NvmlReturn) = nullptr;                       // nvmlErrorString
  NvmlReturn (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;  // nvmlDeviceGetHandleByPciBusId_v2
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned int*) = nullptr;      // nvmlDeviceGetClockInfo (MHz)
  NvmlReturn (*power_usage)(NvmlDevice, unsigned int*) = nullptr;          // nvmlDeviceGetPowerUsage (mW)
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;     // nvmlDeviceGetTemperature (C)
  NvmlReturn (*power_limit)(NvmlDevice, unsigned int*) = nullptr;          // nvmlDeviceGetEnforcedPowerLimit (mW)

  std::string error(const std::string& call, NvmlReturn code) const {
    return call + " failed: " + (error_string ? error_string(code) : "NVML error " + std::to_string(code));
  }
};

namespace {

template <typename F>
bool resolve(void* library, const char* name, F*& out) {
  out = reinterpret_cast<F*>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace

NvmlReader::NvmlReader(const std::string& library) {
  library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* error = dlerror();
    why_not_ = "NVML not loaded (" + std::string(error ? error : library) + ")";
    return;
  }
  api_ = std::make_unique<Api>();
  const bool all = resolve(library_, "nvmlInit_v2", api_->init) && resolve(library_, "nvmlShutdown", api_->shutdown) &&
                   resolve(library_, "nvmlErrorString", api_->error_string) &&
                   resolve(library_, "nvmlDeviceGetHandleByPciBusId_v2", api_->handle_by_pci_bus_id) &&
                   resolve(library_, "nvmlDeviceGetClockInfo", api_->clock_info) &&
                   resolve(library_, "nvmlDeviceGetPowerUsage", api_->power_usage) &&
                   resolve(library_, "nvmlDeviceGetTemperature", api_->temperature);
  if (!all) {
    why_not_ = "NVML in " + library + " lacks an entry point tpsim-real reads";
    return;
  }
  resolve(library_, "nvmlDeviceGetEnforcedPowerLimit", api_->power_limit);  // optional: the limit reads 0 without it
  const NvmlReturn code = api_->init();
  initialized_ = code == kNvmlSuccess;
  if (!initialized_) why_not_ = api_->error("nvmlInit", code);
}

NvmlReader::~NvmlReader() {
  if (initialized_) api_->shutdown();
  if (library_ != nullptr) dlclose(library_);
}

std::optional<GpuReading> NvmlReader::read(const std::string& pci_bus_id, std::string* why) const {
  if (!available()) {
    *why = why_not_;
    return std::nullopt;
  }
  NvmlDevice device = nullptr;
  NvmlReturn code = api_->handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
  if (code != kNvmlSuccess) {
    *why = api_->error("nvmlDeviceGetHandleByPciBusId(" + pci_bus_id + ")", code);
    return std::nullopt;
  }
  unsigned int clock_mhz = 0, power_mw = 0, celsius = 0;
  if ((code = api_->clock_info(device, kNvmlClockSm, &clock_mhz)) != kNvmlSuccess) {
    *why = api_->error("nvmlDeviceGetClockInfo", code);
  } else if ((code = api_->power_usage(device, &power_mw)) != kNvmlSuccess) {
    *why = api_->error("nvmlDeviceGetPowerUsage", code);
  } else if ((code = api_->temperature(device, kNvmlTemperatureGpu, &celsius)) != kNvmlSuccess) {
    *why = api_->error("nvmlDeviceGetTemperature", code);
  } else {
    unsigned int limit_mw = 0;
    if (api_->power_limit == nullptr || api_->power_limit(device, &limit_mw) != kNvmlSuccess) limit_mw = 0;
    return GpuReading{static_cast<double>(clock_mhz), power_mw * 1e-3, static_cast<double>(celsius), limit_mw * 1e-3};
  }
  return std::nullopt;
}

const NvmlReader& system_nvml() {
  static const NvmlReader reader;
  return reader;
}

}  // namespace tpsim::real
