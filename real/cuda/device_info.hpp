// What the device and the libraries say about themselves, for provenance and for sizing buffers.
#pragma once

#include "real/core/provenance.hpp"

namespace tpsim::real {

// Name, SM count, clocks, L2 and memory sizes of `device`, and the driver, runtime, cuBLAS and NCCL
// versions. Throws GpuError if the device cannot be queried.
DeviceFacts device_facts(int device);

// GPUs this process sees (0 when there is no usable driver or device).
int visible_device_count();

}  // namespace tpsim::real
