// The attention of one pass on one rank as numbers, and the FLOPs, causal diagonal and HBM bytes of its kernels:
// one definition for the layers' attention ops and `tpsim predict attention`.
#pragma once

namespace tpsim::model {

// FlashAttention's backward FLOPs over its forward's: five matmuls to the forward's two, as FlashAttention-2
// counts them.
inline constexpr double kAttentionBackwardFlopRatio = 2.5;

// b sequences of q new tokens after c cached ones, hq query and hkv KV heads of dimension d, each query seeing
// the last w keys (w 0: all before it); `causal` false: every query sees every key (no mask, no window).
struct AttentionDims {
  double batch = 1, q = 0, c = 0, hq = 0, hkv = 0, d = 0, w = 0;
  bool causal = true;

  // Query-key pairs per sequence and head. Causal: the integral of min(x, w) over the queries' positions x from c
  // to c + q; q c + q^2 / 2 without a window (or where the window covers every query's past). Unmasked: q (c + q).
  double pairs() const;
  // The forward's FLOPs: 4 b hq d pairs (FlashAttention's count).
  double forward_flops() const { return 4.0 * batch * hq * d * pairs(); }
  // The causal diagonal (Op::causal_inverse_length): each new query's row of it over twice the pairs; 0 unmasked.
  double causal_inverse_length() const { return causal ? q / (2.0 * pairs()) : 0.0; }
  // The keys (and values) the pass reads per sequence: the cached ones within the window, and the new ones.
  double keys() const;

  // The forward's bytes: Q, K and V read at `qkv` bytes an element, the output (`e` bytes) written.
  double query_bytes(double qkv) const { return batch * q * hq * d * qkv; }
  double key_value_bytes(double qkv) const { return 2.0 * batch * keys() * hkv * d * qkv; }
  double output_bytes(double e) const { return batch * q * hq * d * e; }
  // The backward's: Q, O and dO read and dQ written on the query side, K and V read and their gradients written.
  double backward_read_bytes(double e) const { return 3.0 * output_bytes(e) + key_value_bytes(e); }
  double backward_written_bytes(double e) const { return output_bytes(e) + key_value_bytes(e); }
};

}  // namespace tpsim::model
