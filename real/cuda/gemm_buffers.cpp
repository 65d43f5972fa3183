// Allocation and filling of rotating GEMM operands.
#include "real/cuda/gemm_buffers.hpp"

#include <algorithm>

namespace tpsim::real {

int rotation_sets(int64_t l2_bytes, size_t bytes_per_set) {
  // 64 sets of 2 MB already span twice a 60 MB L2 (H200); smaller sets gain nothing from more.
  constexpr size_t kMaxSets = 64;
  const auto twice_l2 = static_cast<size_t>(2 * l2_bytes);
  return static_cast<int>(std::min(kMaxSets, twice_l2 / std::max<size_t>(bytes_per_set, 1) + 1));
}

std::vector<GemmBuffers> make_gemm_sets(const GemmOp& op, int device, int sets, uint64_t seed, cudaStream_t stream) {
  std::vector<GemmBuffers> out;
  const GemmCase& s = op.shape();
  for (int i = 0; i < sets; ++i) {
    GemmBuffers b{DeviceBuffer(device, op.x_bytes()), DeviceBuffer(device, op.w_bytes()),
                  DeviceBuffer(device, op.y_bytes())};
    fill_uniform(b.x.get(), op.operands(), s.m * s.k, seed + 2 * i, 0, stream);
    fill_uniform(b.w.get(), op.operands(), s.n * s.k, seed + 2 * i + 1, 0, stream);
    out.push_back(std::move(b));
  }
  TPSIM_CUDA(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace tpsim::real
