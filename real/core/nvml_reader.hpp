// NVML (the NVIDIA Management Library behind nvidia-smi), loaded when the process first asks: SM clock,
// power draw, temperature and enforced power limit of a GPU. Where the driver's libnvidia-ml.so.1 is missing or NVML
// fails (no driver, a container without it, a GPU that does not report a value), readings are "not recorded" with the
// reason, never an error. The few entry points used are declared here from NVML's documented API (CUDA toolkits do not
// always ship nvml.h) and resolved with dlopen, so that tpsim-real also runs where NVML is absent; nothing links
// against the library.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace tpsim::real {

struct GpuReading {
  double sm_clock_mhz = 0;
  double power_W = 0;
  double temperature_C = 0;
  double power_limit_W = 0;  // the enforced power limit (nvidia-smi -pl); 0 where NVML does not give it
};

class NvmlReader {
 public:
  explicit NvmlReader(const std::string& library = "libnvidia-ml.so.1");
  ~NvmlReader();
  NvmlReader(const NvmlReader&) = delete;
  NvmlReader& operator=(const NvmlReader&) = delete;

  bool available() const { return why_not_.empty(); }
  // Why nothing can be read (empty when NVML is there).
  const std::string& why_not() const { return why_not_; }
  // The GPU at `pci_bus_id` ("0000:3b:00.0", as cudaDeviceGetPCIBusId writes it) now; nullopt with the
  // reason in `why` when NVML is absent or the GPU does not answer.
  std::optional<GpuReading> read(const std::string& pci_bus_id, std::string* why) const;

 private:
  struct Api;
  void* library_ = nullptr;
  std::unique_ptr<Api> api_;
  bool initialized_ = false;
  std::string why_not_;
};

// The process's reader of the driver's NVML, loaded on first use.
const NvmlReader& system_nvml();

}  // namespace tpsim::real
