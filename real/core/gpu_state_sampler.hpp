// What the GPUs did while a point was timed: NVML readings of each of the point's GPUs when sampling
// starts, every `period_s` meanwhile (on a thread of its own) and when it finishes, summarised as the
// measurement's gpu_state (smallest, median and largest SM clock, power and temperature over all
// readings). Without NVML, or when a GPU does not answer, gpu_state is "not recorded" with the reason.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/measurement.hpp"
#include "real/core/nvml_reader.hpp"

namespace tpsim::real {

// recorded when there are readings; else not, with `why_not`.
calibrate::GpuState summarize_gpu_state(const std::vector<GpuReading>& readings, const std::string& why_not);

class GpuStateSampler {
 public:
  // Every 50 ms (assumed): a few readings on the shortest points, twenty a second on long ones. NVML's
  // power reading is itself an average over 1 s on Ampere and newer GPUs (its API reference for
  // nvmlDeviceGetPowerUsage, A100 excepted), so faster polling would add little.
  static constexpr double kPeriodS = 0.05;

  GpuStateSampler(const NvmlReader& nvml, std::vector<std::string> pci_bus_ids, double period_s = kPeriodS);
  ~GpuStateSampler();
  GpuStateSampler(const GpuStateSampler&) = delete;
  GpuStateSampler& operator=(const GpuStateSampler&) = delete;

  // Takes the last readings, stops and summarises.
  calibrate::GpuState finish();

 private:
  void read_all();
  void stop();

  const NvmlReader& nvml_;
  std::vector<std::string> pci_bus_ids_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<GpuReading> readings_;
  std::string why_not_;
  std::thread thread_;
};

}  // namespace tpsim::real
