// Device memory owned by one object: cudaMalloc on a given GPU, freed with it (plain allocations,
// never managed memory, so that timings see HBM and not page migration).
#pragma once

#include <cstddef>
#include <utility>

#include "real/cuda/cuda_check.hpp"

namespace tpsim::real {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates on `device`; the calling thread's current device is left as it was.
  DeviceBuffer(int device, size_t bytes) : device_(device), bytes_(bytes) {
    int current = 0;
    TPSIM_CUDA(cudaGetDevice(&current));
    TPSIM_CUDA(cudaSetDevice(device));
    TPSIM_CUDA(cudaMalloc(&data_, bytes > 0 ? bytes : 1));
    TPSIM_CUDA(cudaSetDevice(current));
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) {
      int current = 0;
      cudaGetDevice(&current);
      cudaSetDevice(device_);
      cudaFree(data_);
      cudaSetDevice(current);
    }
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(bytes_, other.bytes_);
    std::swap(data_, other.data_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  // The byte at `offset`: for slices of one allocation.
  void* at(size_t offset) const { return static_cast<char*>(data_) + offset; }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  int device_ = 0;
  size_t bytes_ = 0;
  void* data_ = nullptr;
};

}  // namespace tpsim::real
