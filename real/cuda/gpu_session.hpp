// What every single-GPU measurement sets up once: the device, its facts and the run's provenance,
// a compute and a side stream, a cuBLASLt handle and its workspace.
#pragma once

#include <cublasLt.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "real/core/options.hpp"
#include "real/core/provenance.hpp"
#include "real/cuda/device_buffer.hpp"

namespace tpsim::real {

class GpuSession {
 public:
  // Throws GpuError naming why when no device can be used.
  GpuSession(const RealOptions& options, const std::vector<std::string>& arguments, int device);
  ~GpuSession();
  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;

  int device() const { return device_; }
  const DeviceFacts& facts() const { return provenance_.device; }
  const std::string& gpu() const { return gpu_; }
  nlohmann::ordered_json provenance_json() const { return to_json(provenance_); }
  cudaStream_t stream() const { return stream_; }
  cudaStream_t side_stream() const { return side_stream_; }
  cublasLtHandle_t lt() const { return lt_; }
  void* workspace() const { return workspace_.get(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }

  // How many input sets to rotate over so that they span more than twice the L2 (at most 64).
  int rotation_sets(size_t bytes_per_set) const;

 private:
  int device_;
  Provenance provenance_;
  std::string gpu_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t side_stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
};

// The device a single-GPU subcommand uses: --local-device, else 0.
int chosen_device(const RealOptions& options);

}  // namespace tpsim::real
