// The few kernels real/ needs besides cuBLASLt and NCCL: random fills, an SM copy kernel (the stand-in
// for a communication kernel's SM and HBM use), and the element-wise sums of the pipelines.
// bf16 data is accumulated in float and rounded once.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "real/core/element_type.hpp"

namespace tpsim::real {

// data[i] = scale * uniform_value(seed, first_index + i) in the element type (random_values.hpp).
void fill_uniform(void* data, ElementType type, int64_t count, uint64_t seed, uint64_t first_index, cudaStream_t stream,
                  float scale = 1.0f);

// Copies `bytes` with `blocks` thread blocks (16-byte accesses; 0 blocks: one per SM of the device).
void copy_with_kernel(void* dst, const void* src, size_t bytes, int blocks, cudaStream_t stream);

// A kernel that does nothing: one block of one thread (what a launch costs, alone).
void launch_empty_kernel(cudaStream_t stream);
// One thread that spins on the GPU's global timer for `seconds`: keeps a stream busy while the host
// queues work behind it.
void launch_spin_kernel(cudaStream_t stream, double seconds);

// out[i] = a[i] + b[i] (bf16); out may alias a or b.
void add_bf16(void* out, const void* a, const void* b, int64_t count, cudaStream_t stream);
// h[i] += all[i] - own[i] (bf16): the other ranks' share of a reduced partial, added late.
void add_difference_bf16(void* h, const void* all, const void* own, int64_t count, cudaStream_t stream);
// out[i] = sum over s < slices of in[s * count + i] (bf16).
void sum_slices_bf16(void* out, const void* in, int slices, int64_t count, cudaStream_t stream);

}  // namespace tpsim::real
