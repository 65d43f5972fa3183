// One rank's chunked async-TP pipelines and their unchunked baselines, for the per-rank GEMM of shape
// M x N x K over `ranks` GPUs and `chunks` = ranks x pieces GEMM pieces:
//   allgather_gemm: Y[M, N] = AllGather(X shards of M / ranks rows)[M, K] W[N, K]^T. Over NCCL the
//     shards travel a ring (send to rank+1, receive from rank-1, piece by piece) while the GEMM
//     multiplies the pieces already here; over the copy engine each rank pulls every piece straight
//     from its owner (cudaMemcpyPeerAsync), as symmetric-memory async TP does.
//   gemm_reducescatter: Out[M / ranks, N] = ReduceScatter(X[M, K] W[N, K]^T). Over NCCL partial sums
//     travel a ring: each piece's GEMM runs, the reduce stream adds what arrived from rank-1, and the
//     sum goes on to rank+1; over the copy engine owners pull each rank's partial pieces and sum them
//     in one kernel at the end.
// Baselines: the NCCL collective, then (or after) the whole GEMM, on one stream.
// The NCCL pipelines are enqueued by each rank's own thread; the copy-engine ones, which wait on other
// GPUs' events, by one thread for all ranks, step by step, so every event is recorded before it is waited on.
// Each run is queued whole behind a barrier across ranks and a spinning kernel (real/core/queue_ahead.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "real/core/gemm_shapes.hpp"
#include "real/cuda/comm_team.hpp"
#include "real/cuda/gemm_op.hpp"
#include "real/cuda/queued_region.hpp"

namespace tpsim::real {

struct AsyncTpConfig {
  std::string pattern;  // allgather_gemm, gemm_reducescatter
  GemmCase shape;       // per-rank, unchunked
  ElementType operands = ElementType::kBf16;
  int ranks = 2;
  int chunks = 2;  // a multiple of ranks

  int pieces() const { return chunks / ranks; }
  int64_t shard_rows() const { return shape.m / ranks; }
  int64_t piece_rows() const { return shape.m / chunks; }
};

// Empty when the configuration can run, else why not (chunks not a multiple of ranks, M not divisible).
std::string check_async_tp(const AsyncTpConfig& config);

class AsyncTpPipeline {
 public:
  AsyncTpPipeline(Rank& rank, const AsyncTpConfig& config, uint64_t seed);
  ~AsyncTpPipeline();
  AsyncTpPipeline(const AsyncTpPipeline&) = delete;
  AsyncTpPipeline& operator=(const AsyncTpPipeline&) = delete;

  Rank& rank() { return rank_; }
  // Fills with NaN the outputs, and the gathered shards, that the next runs must overwrite.
  void poison_outputs();
  // Queues a barrier across ranks (unless the caller queued one for every rank), the spin and the start
  // on the compute stream; the other streams wait for it.
  void begin(bool barrier);
  // Joins the other streams into the compute stream and records the stop; true when late
  // (queued_region.hpp).
  bool end();
  double elapsed_s() const;

  void enqueue_baseline();
  void enqueue_nccl_pipeline();
  // Step `step` of the copy-engine pipeline on this rank; `peers` are all ranks' pipelines by rank.
  void enqueue_copy_engine_step(int step, const std::vector<AsyncTpPipeline*>& peers);
  static int copy_engine_steps(int ranks) { return ranks + 1; }

  // The pipelined and the baseline output of this rank, and their element count.
  const void* output() const;
  const void* baseline_output() const;
  int64_t output_elements() const;

 private:
  void* x_rows(int64_t row) const;
  void* y_rows(void* base, int64_t row) const;
  cudaEvent_t event(std::vector<cudaEvent_t>& set, int step, int piece) const;

  Rank& rank_;
  AsyncTpConfig config_;
  std::unique_ptr<GemmOp> whole_, piece_;
  DeviceBuffer x_, w_, y_, baseline_, out_, send_, recv_, slots_, shard_;
  std::vector<cudaEvent_t> arrived_, computed_, summed_;
  cudaEvent_t pulled_ = nullptr;  // copy engine, GEMM+RS: every pull into this rank's slots is done
  QueuedRegion region_;
};

}  // namespace tpsim::real
