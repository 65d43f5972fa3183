// Host read-back and decoding of device tensors.
#include "real/cuda/gemm_check.hpp"

#include <cstring>

#include "real/core/random_values.hpp"
#include "real/cuda/cuda_check.hpp"

namespace tpsim::real {
namespace {

std::vector<float> read_row(const void* base, ElementType type, int64_t row, int64_t stride, int64_t count) {
  std::vector<double> wide =
      read_values(static_cast<const char*>(base) + row * stride * element_bytes(type), type, count);
  return std::vector<float>(wide.begin(), wide.end());
}

}  // namespace

std::vector<double> read_values(const void* data, ElementType type, int64_t count) {
  std::vector<unsigned char> bytes(static_cast<size_t>(count) * element_bytes(type));
  TPSIM_CUDA(cudaMemcpy(bytes.data(), data, bytes.size(), cudaMemcpyDeviceToHost));
  std::vector<double> out(static_cast<size_t>(count));
  for (size_t i = 0; i < out.size(); ++i) {
    if (type == ElementType::kBf16) {
      uint16_t bits = 0;
      std::memcpy(&bits, &bytes[2 * i], 2);
      out[i] = bf16_value(bits);
    } else if (type == ElementType::kFp8E4m3) {
      out[i] = fp8_e4m3_value(bytes[i]);
    } else {
      float value = 0;
      std::memcpy(&value, &bytes[4 * i], 4);
      out[i] = value;
    }
  }
  return out;
}

std::vector<SampledEntry> sample_gemm_outputs(const GemmOp& op, const void* x, const void* w, const void* y, int count,
                                              uint64_t seed, int64_t x_stride) {
  const GemmCase& s = op.shape();
  const int64_t stride = x_stride > 0 ? x_stride : s.k;
  std::vector<SampledEntry> entries;
  for (const auto& [row, column] : sample_positions(s.m, s.n, count, seed)) {
    SampledEntry e;
    e.x_row = read_row(x, op.operands(), row, stride, s.k);
    e.w_row = read_row(w, op.operands(), column, s.k, s.k);
    e.y = static_cast<float>(
        read_values(static_cast<const char*>(y) + (row * s.n + column) * 2, ElementType::kBf16, 1)[0]);
    entries.push_back(std::move(e));
  }
  return entries;
}

double compare_sampled_bf16(const void* expected, const void* got, int64_t count, uint64_t seed) {
  constexpr int kSamples = 1024;
  std::vector<double> a, b;
  for (const auto& [unused, i] : sample_positions(1, count, kSamples, seed)) {
    a.push_back(read_values(static_cast<const char*>(expected) + i * 2, ElementType::kBf16, 1)[0]);
    b.push_back(read_values(static_cast<const char*>(got) + i * 2, ElementType::kBf16, 1)[0]);
  }
  return relative_error(a, b);
}

double check_gemm(const GemmOp& op, const void* x, const void* w, const void* y, uint64_t seed, int64_t x_stride) {
  constexpr int kSamples = 64;
  return sampled_gemm_error(sample_gemm_outputs(op, x, w, y, kSamples, seed, x_stride));
}

}  // namespace tpsim::real
