// Reads sampled rows of a GEMM's operands and the matching outputs back from the device, for the
// float64 check of accuracy.hpp; and host copies of whole bf16 tensors for pipeline checks.
#pragma once

#include <cstdint>
#include <vector>

#include "real/core/accuracy.hpp"
#include "real/cuda/gemm_op.hpp"

namespace tpsim::real {

// `count` sampled outputs of op.run(x, w, y) (synchronous; y must be written already). X rows are
// `x_stride` elements apart (0: K).
std::vector<SampledEntry> sample_gemm_outputs(const GemmOp& op, const void* x, const void* w, const void* y, int count,
                                              uint64_t seed, int64_t x_stride = 0);

// Decoded device values (synchronous copy of `count` elements).
std::vector<double> read_values(const void* data, ElementType type, int64_t count);

// Relative error of `count` bf16 values at `got` against those at `expected`, over 1024 sampled
// positions (synchronous).
double compare_sampled_bf16(const void* expected, const void* got, int64_t count, uint64_t seed);

// Relative error of a GEMM's output against sampled float64 references.
double check_gemm(const GemmOp& op, const void* x, const void* w, const void* y, uint64_t seed, int64_t x_stride = 0);

}  // namespace tpsim::real
