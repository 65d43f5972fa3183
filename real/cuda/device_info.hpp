// What the device and the libraries say about themselves, for provenance and for sizing buffers.
#pragma once

#include <vector>

#include "real/core/gpu_state_sampler.hpp"
#include "real/core/provenance.hpp"

namespace tpsim::real {

// Name, SM count, clocks, L2 and memory sizes of `device`, and the driver, runtime, cuBLAS and NCCL
// versions. Throws GpuError if the device cannot be queried.
DeviceFacts device_facts(int device);

// GPUs this process sees (0 when there is no usable driver or device).
int visible_device_count();

// NVML's view of `devices` (CUDA device numbers) while a point is timed: readings by PCI bus id.
GpuStateSampler sample_gpu_state(const std::vector<int>& devices);

// Lets `device` read and write `peer`'s memory directly (NVLink or PCIe peer access); false when the
// pair cannot, and copies between them are then staged by the driver. Leaves the current device alone.
bool enable_peer_access(int device, int peer);

}  // namespace tpsim::real
