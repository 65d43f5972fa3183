// The sampling thread and the summary.
#include "real/core/gpu_state_sampler.hpp"

#include <chrono>

#include "real/core/stats.hpp"

namespace tpsim::real {
namespace {

calibrate::Spread spread_of(const std::vector<GpuReading>& readings, double GpuReading::*field) {
  std::vector<double> values;
  for (const GpuReading& r : readings) values.push_back(r.*field);
  const Summary s = summarize(values);
  return {s.min, s.median, s.max};
}

}  // namespace

calibrate::GpuState summarize_gpu_state(const std::vector<GpuReading>& readings, const std::string& why_not) {
  calibrate::GpuState g;
  if (readings.empty()) {
    g.why_not = why_not.empty() ? "no NVML reading" : why_not;
    return g;
  }
  g.recorded = true;
  g.readings = static_cast<int>(readings.size());
  g.sm_clock_mhz = spread_of(readings, &GpuReading::sm_clock_mhz);
  g.power_W = spread_of(readings, &GpuReading::power_W);
  g.temperature_C = spread_of(readings, &GpuReading::temperature_C);
  g.power_limit_W = spread_of(readings, &GpuReading::power_limit_W).max;
  return g;
}

GpuStateSampler::GpuStateSampler(const NvmlReader& nvml, std::vector<std::string> pci_bus_ids, double period_s)
    : nvml_(nvml), pci_bus_ids_(std::move(pci_bus_ids)) {
  read_all();
  if (!nvml_.available()) return;  // nothing to sample: finish() says why
  thread_ = std::thread([this, period_s] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::duration<double>(period_s), [this] { return stopping_; })) {
      lock.unlock();
      read_all();
      lock.lock();
    }
  });
}

GpuStateSampler::~GpuStateSampler() {
  stop();
}

void GpuStateSampler::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuStateSampler::read_all() {
  for (const std::string& bus : pci_bus_ids_) {
    std::string why;
    const std::optional<GpuReading> r = nvml_.read(bus, &why);
    const std::lock_guard<std::mutex> lock(mutex_);
    if (r) {
      readings_.push_back(*r);
    } else if (why_not_.empty()) {
      why_not_ = why;
    }
  }
}

calibrate::GpuState GpuStateSampler::finish() {
  read_all();
  stop();
  const std::lock_guard<std::mutex> lock(mutex_);
  // A GPU that never answered makes the summary one of the others only: not what the point ran on.
  if (!why_not_.empty()) return summarize_gpu_state({}, why_not_);
  return summarize_gpu_state(readings_, why_not_);
}

}  // namespace tpsim::real
