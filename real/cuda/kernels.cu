// Grid-stride kernels; launch errors are checked by the callers' TPSIM_CUDA_LAUNCHED.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "real/core/random_values.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {
namespace {

constexpr int kThreads = 256;

int grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

template <typename T>
__device__ T convert(float value);
template <>
__device__ __nv_bfloat16 convert<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}
template <>
__device__ __nv_fp8_e4m3 convert<__nv_fp8_e4m3>(float value) {
  return __nv_fp8_e4m3(value);
}
template <>
__device__ float convert<float>(float value) {
  return value;
}

template <typename T>
__global__ void fill_uniform_kernel(T* data, int64_t count, uint64_t seed, uint64_t first_index, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    data[i] = convert<T>(scale * uniform_value(seed, first_index + static_cast<uint64_t>(i)));
  }
}

__global__ void copy_kernel(uint4* dst, const uint4* src, int64_t vectors, char* dst_tail, const char* src_tail,
                            int64_t tail_bytes) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (int64_t i = first; i < vectors; i += stride) dst[i] = src[i];
  for (int64_t i = first; i < tail_bytes; i += stride) dst_tail[i] = src_tail[i];
}

__global__ void empty_kernel() {}

__device__ uint64_t global_timer_ns() {
  uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t nanoseconds) {
  const uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < nanoseconds) {
  }
}

__global__ void add_kernel(__nv_bfloat16* out, const __nv_bfloat16* a, const __nv_bfloat16* b, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = __float2bfloat16_rn(__bfloat162float(a[i]) + __bfloat162float(b[i]));
  }
}

__global__ void add_difference_kernel(__nv_bfloat16* h, const __nv_bfloat16* all, const __nv_bfloat16* own,
                                      int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    const float late = __bfloat162float(all[i]) - __bfloat162float(own[i]);
    h[i] = __float2bfloat16_rn(__bfloat162float(h[i]) + late);
  }
}

__global__ void sum_slices_kernel(__nv_bfloat16* out, const __nv_bfloat16* in, int slices, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    float sum = 0;
    for (int s = 0; s < slices; ++s) sum += __bfloat162float(in[s * count + i]);
    out[i] = __float2bfloat16_rn(sum);
  }
}

}  // namespace

void fill_uniform(void* data, ElementType type, int64_t count, uint64_t seed, uint64_t first_index, cudaStream_t stream,
                  float scale) {
  const int grid = grid_for(count);
  switch (type) {
    case ElementType::kBf16:
      fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed, first_index,
                                                         scale);
      break;
    case ElementType::kFp8E4m3:
      fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed, first_index,
                                                         scale);
      break;
    case ElementType::kFloat32:
      fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(data), count, seed, first_index, scale);
      break;
  }
  TPSIM_CUDA_LAUNCHED();
}

void copy_with_kernel(void* dst, const void* src, size_t bytes, int blocks, cudaStream_t stream) {
  if (blocks <= 0) {
    int device = 0;
    TPSIM_CUDA(cudaGetDevice(&device));
    TPSIM_CUDA(cudaDeviceGetAttribute(&blocks, cudaDevAttrMultiProcessorCount, device));
  }
  // cudaMalloc returns 256-byte aligned memory; callers copy from the start of allocations.
  const auto vectors = static_cast<int64_t>(bytes / sizeof(uint4));
  const size_t head = static_cast<size_t>(vectors) * sizeof(uint4);
  copy_kernel<<<blocks, 512, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), vectors,
                                          static_cast<char*>(dst) + head, static_cast<const char*>(src) + head,
                                          static_cast<int64_t>(bytes - head));
  TPSIM_CUDA_LAUNCHED();
}

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  TPSIM_CUDA(cudaGetLastError());
}

void launch_spin_kernel(cudaStream_t stream, double seconds) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<uint64_t>(seconds * 1e9));
  TPSIM_CUDA(cudaGetLastError());
}

void add_bf16(void* out, const void* a, const void* b, int64_t count, cudaStream_t stream) {
  add_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(out),
                                                       static_cast<const __nv_bfloat16*>(a),
                                                       static_cast<const __nv_bfloat16*>(b), count);
  TPSIM_CUDA_LAUNCHED();
}

void add_difference_bf16(void* h, const void* all, const void* own, int64_t count, cudaStream_t stream) {
  add_difference_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(h),
                                                                  static_cast<const __nv_bfloat16*>(all),
                                                                  static_cast<const __nv_bfloat16*>(own), count);
  TPSIM_CUDA_LAUNCHED();
}

void sum_slices_bf16(void* out, const void* in, int slices, int64_t count, cudaStream_t stream) {
  sum_slices_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(out),
                                                              static_cast<const __nv_bfloat16*>(in), slices, count);
  TPSIM_CUDA_LAUNCHED();
}

}  // namespace tpsim::real
