// One rank's chain of `modules` GEMM modules on a residual stream H[M, N] (identical on every rank at
// the start): module m computes this rank's partial P_m = H[:, :K] W_m[N, K]^T (its own weights) and
// the chain runs as a scenario's tp_mode dtp runs its modules (model/parallel/dtp_schedule.hpp, the steps of
// model::dtp_chain_steps in order):
//   delta 0, blocking TP: H += AllReduce(P_m) before module m + 1 starts.
//   delta > 0: H += P_m at once (a rank sees its own partial immediately); the all-reduce runs on the
//     communication stream, and module m + 1 + delta adds the other ranks' share, AllReduce(P_m) - P_m,
//     before its GEMM; the last delta + 1 modules reduce nothing (no module would add it), and an
//     all-reduce of H ends the chain (the final reduction of a dtp pass).
// The same chain is run with its all-reduces on the compute stream (nothing overlaps) as the reference:
// the overlapped chain must give the same H. Each run is queued whole behind a spinning kernel, after a
// barrier across ranks (real/core/queue_ahead.hpp).
#pragma once

#include <memory>
#include <vector>

#include "model/parallel/dtp_schedule.hpp"
#include "real/core/gemm_shapes.hpp"
#include "real/cuda/comm_team.hpp"
#include "real/cuda/gemm_op.hpp"
#include "real/cuda/queued_region.hpp"

namespace tpsim::real {

struct DtpConfig {
  GemmCase shape;  // per-rank module GEMM; K <= N
  ElementType operands = ElementType::kBf16;
  int modules = 8;
  int delta = 1;
};

class DtpChain {
 public:
  DtpChain(Rank& rank, const DtpConfig& config, uint64_t seed);
  ~DtpChain();
  DtpChain(const DtpChain&) = delete;
  DtpChain& operator=(const DtpChain&) = delete;

  // Resets H to the chain's input (outside any timed region), then queues the barrier, the spin and
  // the start.
  void begin();
  // Returns whether the iteration was late (queued_region.hpp).
  bool end();
  double elapsed_s() const;

  // The chain with delta 0.
  void enqueue_blocking_tp();
  // The chain with the configured delta. `overlap`: all-reduces on the communication stream; else on the
  // compute stream (the reference).
  void enqueue_dtp(bool overlap);

  const void* state() const { return h_.get(); }
  int64_t state_elements() const { return config_.shape.m * config_.shape.n; }

 private:
  void enqueue(const model::DtpSchedule& schedule, bool overlap);
  void* slot(const DeviceBuffer& buffer, int module) const;
  void all_reduce(const void* in, void* out, cudaStream_t stream);

  Rank& rank_;
  DtpConfig config_;
  std::unique_ptr<GemmOp> gemm_;
  DeviceBuffer h_, h0_, partials_, reduced_;
  std::vector<DeviceBuffer> weights_;
  std::vector<cudaEvent_t> produced_, arrived_;
  cudaEvent_t residual_done_ = nullptr;
  QueuedRegion region_;
};

}  // namespace tpsim::real
