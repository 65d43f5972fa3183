// Fits attention.backward_causal_tokens on published backward rates of one kernel with and without a causal mask:
// a causal backward over L tokens takes 1 + D / L times the time its FLOPs take at the unmasked rate.
#pragma once

#include <span>
#include <string>

namespace tpsim::calibrate {

// One sequence length's backward rates of a kernel, in TFLOP/s (FlashAttention's count: the causal one over half
// the pairs), measured in one harness on one GPU.
struct CausalBackwardPoint {
  double seq_len = 0;
  double unmasked_tflops = 0;
  double causal_tflops = 0;
};

struct CausalTokensFit {
  double tokens = 0;             // D
  double max_abs_error_pct = 0;  // of the causal backward's time, over the points
};

// D by least squares on the time ratios (unmasked rate / causal rate = 1 + D / L).
CausalTokensFit fit_causal_tokens(std::span<const CausalBackwardPoint> points);

// The published points each shipped attention kernel's D is fitted on, and where they come from.
struct PublishedCausalBackward {
  std::span<const CausalBackwardPoint> points;
  const char* source;
};
// Of the kernel a profile names "fa3", "fa2" or "cudnn"; std::out_of_range for another.
const PublishedCausalBackward& published_causal_backward(const std::string& kernel);

// "; its causal backward D tokens more (fitted on ...: N lengths, ..., max error E%)", for a kernel's source.
std::string causal_tokens_source(const PublishedCausalBackward& published);

}  // namespace tpsim::calibrate
