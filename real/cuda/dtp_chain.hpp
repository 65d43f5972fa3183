// One rank's chain of `modules` GEMM modules on a residual stream H[M, N] (identical on every rank at
// the start): module l computes this rank's partial P_l = H[:, :K] W_l[N, K]^T (its own weights),
// all-reduces it, and adds it to H.
//   Blocking TP: H += AllReduce(P_l) before module l + 1 starts.
//   DTP with delay delta: H += P_l at once (a rank sees its own partial immediately); the all-reduce
//     runs on the communication stream, and module l + delta - 1 adds the other ranks' share,
//     AllReduce(P_l) - P_l, before its GEMM; the chain's end adds whatever is still outstanding.
//     delta = 1 is blocking TP up to rounding.
// The same DTP function is run with its all-reduces on the compute stream (nothing overlaps) as the
// reference: the overlapped chain must give the same H.
#pragma once

#include <memory>
#include <vector>

#include "real/core/gemm_shapes.hpp"
#include "real/cuda/comm_team.hpp"
#include "real/cuda/event_timer.hpp"
#include "real/cuda/gemm_op.hpp"

namespace tpsim::real {

struct DtpConfig {
  GemmCase shape;  // per-rank module GEMM; K <= N
  ElementType operands = ElementType::kBf16;
  int modules = 8;
  int delta = 2;
};

class DtpChain {
 public:
  DtpChain(Rank& rank, const DtpConfig& config, uint64_t seed);
  ~DtpChain();
  DtpChain(const DtpChain&) = delete;
  DtpChain& operator=(const DtpChain&) = delete;

  // Resets H to the chain's input (outside any timed region), then records the start.
  void begin();
  void end();
  double elapsed_s() const;

  void enqueue_blocking_tp();
  // `overlap`: all-reduces on the communication stream; else on the compute stream (the reference).
  void enqueue_dtp(bool overlap);

  const void* state() const { return h_.get(); }
  int64_t state_elements() const { return config_.shape.m * config_.shape.n; }

 private:
  void* slot(const DeviceBuffer& buffer, int module) const;
  void all_reduce(int module, cudaStream_t stream);

  Rank& rank_;
  DtpConfig config_;
  std::unique_ptr<GemmOp> gemm_;
  DeviceBuffer h_, h0_, partials_, reduced_;
  std::vector<DeviceBuffer> weights_;
  std::vector<cudaEvent_t> produced_, arrived_;
  StreamRegion region_;
};

}  // namespace tpsim::real
