// Operand sets of one GEMM, filled with random values, rotated between launches so that the inputs
// span more than twice the L2 and every launch reads HBM as it would in a model.
#pragma once

#include <cstdint>
#include <vector>

#include "real/cuda/device_buffer.hpp"
#include "real/cuda/gemm_op.hpp"

namespace tpsim::real {

struct GemmBuffers {
  DeviceBuffer x, w, y;
};

// Sets whose total exceeds twice `l2_bytes` (at most 64).
int rotation_sets(int64_t l2_bytes, size_t bytes_per_set);

// `sets` operand sets of `op` on `device`, set i filled from seeds seed + 2i (X) and seed + 2i + 1 (W).
std::vector<GemmBuffers> make_gemm_sets(const GemmOp& op, int device, int sets, uint64_t seed, cudaStream_t stream);

}  // namespace tpsim::real
