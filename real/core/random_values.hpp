// Reproducible test data, identical on host and device: a counter-based generator (the SplitMix64
// finaliser) giving uniform values in (-1, 1) that are never zero, and the bf16 / fp8-e4m3 codecs the
// host needs to check what the device computed.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__CUDACC__)
#define TPSIM_HOST_DEVICE __host__ __device__
#else
#define TPSIM_HOST_DEVICE
#endif

namespace tpsim::real {

TPSIM_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// An odd multiple of 2^-24 in (-1, 1): uniform, never zero.
TPSIM_HOST_DEVICE inline float uniform_value(uint64_t seed, uint64_t index) {
  // The FNV-1a 64-bit prime spreads consecutive seeds apart before the mix; the top 24 bits remain.
  const uint64_t bits = mix64(seed * 0x100000001B3ULL ^ mix64(index)) >> 40;
  return static_cast<float>(2 * static_cast<int64_t>(bits) + 1 - (int64_t{1} << 24)) * (1.0f / 16777216.0f);
}

// bf16 <-> float on the host (round to nearest even; NaN stays NaN).
inline uint16_t bf16_bits(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0) return 0x7FC0;
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
inline float bf16_value(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value = 0;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// fp8 e4m3 (OCP "FN": bias 7, no infinities, S.1111.111 is NaN) to float on the host.
inline float fp8_e4m3_value(uint8_t bits) {
  const float sign = (bits & 0x80u) ? -1.0f : 1.0f;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa) / 8.0f, -6);
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

}  // namespace tpsim::real
