// Stream and event choreography of the async-TP pipelines (see the header for the schemes).
#include "real/cuda/async_tp_pipeline.hpp"

#include "real/cuda/cuda_check.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {
std::string check_async_tp(const AsyncTpConfig& c) {
  if (c.chunks % c.ranks != 0) {
    return "--chunks " + std::to_string(c.chunks) + ": real pipelines split each of the " + std::to_string(c.ranks) +
           " shards into equal pieces, so chunks must be a multiple of " + std::to_string(c.ranks);
  }
  if (c.shape.m % c.chunks != 0) {
    return "--shape M=" + std::to_string(c.shape.m) + " must be divisible by --chunks " + std::to_string(c.chunks);
  }
  return "";
}

AsyncTpPipeline::AsyncTpPipeline(Rank& rank, const AsyncTpConfig& config, uint64_t seed)
    : rank_(rank), config_(config), region_(rank.compute, {rank.comm_stream, rank.copy}) {
  const GemmCase& s = config.shape;
  const int r = rank.rank, n = config.ranks;
  const size_t elem = element_bytes(config.operands);
  const bool gather = config.pattern == "allgather_gemm";
  whole_ = std::make_unique<GemmOp>(rank.lt, s, config.operands, rank.workspace.get(), kGemmWorkspaceBytes);
  piece_ = std::make_unique<GemmOp>(rank.lt, GemmCase{config.piece_rows(), s.n, s.k, 1, ""}, config.operands,
                                    rank.workspace.get(), kGemmWorkspaceBytes);
  const auto out_elements = static_cast<size_t>(output_elements());
  x_ = DeviceBuffer(rank.device, static_cast<size_t>(s.m * s.k) * elem);
  w_ = DeviceBuffer(rank.device, static_cast<size_t>(s.n * s.k) * elem);
  y_ = DeviceBuffer(rank.device, static_cast<size_t>(s.m * s.n) * 2);
  baseline_ = DeviceBuffer(rank.device, out_elements * 2);
  if (gather) {
    // The global X is one matrix; this rank holds rows [r * M / n, (r + 1) * M / n) of it.
    fill_uniform(x_rows(r * config.shard_rows()), config.operands, config.shard_rows() * s.k, seed,
                 static_cast<uint64_t>(r * config.shard_rows() * s.k), rank.compute);
  } else {
    fill_uniform(x_.get(), config.operands, s.m * s.k, seed + 17 * static_cast<uint64_t>(r + 1), 0, rank.compute);
    out_ = DeviceBuffer(rank.device, out_elements * 2);
    send_ = DeviceBuffer(rank.device, 2 * out_elements * 2);
    recv_ = DeviceBuffer(rank.device, 2 * out_elements * 2);
    slots_ = DeviceBuffer(rank.device, static_cast<size_t>(n) * out_elements * 2);
  }
  fill_uniform(w_.get(), config.operands, s.n * s.k, seed + 1000 + static_cast<uint64_t>(r), 0, rank.compute);
  TPSIM_CUDA(cudaStreamSynchronize(rank.compute));
  for (int i = 0; i < config.chunks; ++i) {
    arrived_.push_back(ordering_event());
    computed_.push_back(ordering_event());
    summed_.push_back(ordering_event());
  }
  pulled_ = ordering_event();
}

AsyncTpPipeline::~AsyncTpPipeline() {
  cudaSetDevice(rank_.device);
  for (auto* set : {&arrived_, &computed_, &summed_}) {
    for (cudaEvent_t e : *set) cudaEventDestroy(e);
  }
  cudaEventDestroy(pulled_);
}

void* AsyncTpPipeline::x_rows(int64_t row) const {
  return x_.at(static_cast<size_t>(row * config_.shape.k) * element_bytes(config_.operands));
}

void* AsyncTpPipeline::y_rows(void* base, int64_t row) const {
  return static_cast<char*>(base) + static_cast<size_t>(row * config_.shape.n) * 2;
}

cudaEvent_t AsyncTpPipeline::event(std::vector<cudaEvent_t>& set, int step, int piece) const {
  return set.at(static_cast<size_t>(step * config_.pieces() + piece));
}

int64_t AsyncTpPipeline::output_elements() const {
  const int64_t rows = config_.pattern == "allgather_gemm" ? config_.shape.m : config_.shard_rows();
  return rows * config_.shape.n;
}

const void* AsyncTpPipeline::output() const {
  return config_.pattern == "allgather_gemm" ? y_.get() : out_.get();
}

const void* AsyncTpPipeline::baseline_output() const {
  return baseline_.get();
}

void AsyncTpPipeline::poison_outputs() {
  TPSIM_CUDA(
      cudaMemsetAsync(const_cast<void*>(output()), 0xFF, static_cast<size_t>(output_elements()) * 2, rank_.compute));
  TPSIM_CUDA(cudaMemsetAsync(baseline_.get(), 0xFF, baseline_.bytes(), rank_.compute));
  if (config_.pattern == "allgather_gemm") {
    // The other ranks' shards must arrive: NaN where they belong until they do.
    const int64_t own = rank_.rank * config_.shard_rows();
    const auto before = static_cast<size_t>(own * config_.shape.k) * element_bytes(config_.operands);
    const size_t own_bytes =
        static_cast<size_t>(config_.shard_rows() * config_.shape.k) * element_bytes(config_.operands);
    TPSIM_CUDA(cudaMemsetAsync(x_.get(), 0xFF, before, rank_.compute));
    TPSIM_CUDA(cudaMemsetAsync(x_.at(before + own_bytes), 0xFF, x_.bytes() - before - own_bytes, rank_.compute));
  }
}

void AsyncTpPipeline::begin(bool barrier) {
  if (!barrier) return region_.begin();
  region_.begin([this](cudaStream_t stream) { enqueue_barrier(rank_, stream); });
}

bool AsyncTpPipeline::end() {
  return region_.end();
}

double AsyncTpPipeline::elapsed_s() const {
  return region_.seconds();
}

void AsyncTpPipeline::enqueue_baseline() {
  const int r = rank_.rank;
  const GemmCase& s = config_.shape;
  if (config_.pattern == "allgather_gemm") {
    const auto shard_bytes = static_cast<size_t>(config_.shard_rows() * s.k) * element_bytes(config_.operands);
    TPSIM_NCCL(
        ncclAllGather(x_rows(r * config_.shard_rows()), x_.get(), shard_bytes, ncclInt8, rank_.comm, rank_.compute));
    whole_->run(x_.get(), w_.get(), baseline_.get(), rank_.compute);
  } else {
    whole_->run(x_.get(), w_.get(), y_.get(), rank_.compute);
    TPSIM_NCCL(ncclReduceScatter(y_.get(), baseline_.get(), static_cast<size_t>(output_elements()), ncclBfloat16,
                                 ncclSum, rank_.comm, rank_.compute));
  }
}

void AsyncTpPipeline::enqueue_nccl_pipeline() {
  const int r = rank_.rank, n = config_.ranks, pieces = config_.pieces();
  const int64_t shard = config_.shard_rows(), piece = config_.piece_rows();
  const int64_t n_cols = config_.shape.n;
  if (config_.pattern == "allgather_gemm") {
    const auto piece_bytes = static_cast<size_t>(piece * config_.shape.k) * element_bytes(config_.operands);
    for (int t = 0; t + 1 < n; ++t) {  // step t forwards shard r - t and receives shard r - t - 1
      for (int p = 0; p < pieces; ++p) {
        TPSIM_NCCL(ncclGroupStart());
        TPSIM_NCCL(ncclSend(x_rows(wrap_rank(r - t, n) * shard + p * piece), piece_bytes, ncclInt8, wrap_rank(r + 1, n),
                            rank_.comm, rank_.comm_stream));
        TPSIM_NCCL(ncclRecv(x_rows(wrap_rank(r - t - 1, n) * shard + p * piece), piece_bytes, ncclInt8,
                            wrap_rank(r - 1, n), rank_.comm, rank_.comm_stream));
        TPSIM_NCCL(ncclGroupEnd());
        TPSIM_CUDA(cudaEventRecord(event(arrived_, t + 1, p), rank_.comm_stream));
      }
    }
    for (int t = 0; t < n; ++t) {
      for (int p = 0; p < pieces; ++p) {
        if (t > 0) TPSIM_CUDA(cudaStreamWaitEvent(rank_.compute, event(arrived_, t, p), 0));
        const int64_t row = wrap_rank(r - t, n) * shard + p * piece;
        piece_->run(x_rows(row), w_.get(), y_rows(y_.get(), row), rank_.compute);
      }
    }
    return;
  }
  // GEMM + reduce-scatter: step t computes the partial of shard r - t - 1, adds what rank r - 1 summed
  // for it so far, and passes the sum on; the last step's shard is this rank's own.
  const int64_t piece_elements = piece * n_cols;
  auto parity_piece = [&](const DeviceBuffer& b, int t, int p) {
    return b.at(static_cast<size_t>(((t % 2) * shard + p * piece) * n_cols) * 2);
  };
  for (int t = 0; t < n; ++t) {
    for (int p = 0; p < pieces; ++p) {
      const int64_t row = wrap_rank(r - t - 1, n) * shard + p * piece;
      void* partial = y_rows(y_.get(), row);
      piece_->run(x_rows(row), w_.get(), partial, rank_.compute);
      TPSIM_CUDA(cudaEventRecord(event(computed_, t, p), rank_.compute));
      const void* outgoing = partial;
      cudaEvent_t ready = event(computed_, t, p);
      if (t > 0) {
        TPSIM_CUDA(cudaStreamWaitEvent(rank_.copy, event(computed_, t, p), 0));
        TPSIM_CUDA(cudaStreamWaitEvent(rank_.copy, event(arrived_, t, p), 0));
        void* sum = t + 1 < n ? parity_piece(send_, t, p) : y_rows(out_.get(), p * piece);
        add_bf16(sum, partial, parity_piece(recv_, t, p), piece_elements, rank_.copy);
        TPSIM_CUDA(cudaEventRecord(event(summed_, t, p), rank_.copy));
        outgoing = sum;
        ready = event(summed_, t, p);
      }
      if (t + 1 < n) {
        TPSIM_CUDA(cudaStreamWaitEvent(rank_.comm_stream, ready, 0));
        TPSIM_NCCL(ncclGroupStart());
        TPSIM_NCCL(ncclSend(outgoing, static_cast<size_t>(piece_elements), ncclBfloat16, wrap_rank(r + 1, n),
                            rank_.comm, rank_.comm_stream));
        TPSIM_NCCL(ncclRecv(parity_piece(recv_, t + 1, p), static_cast<size_t>(piece_elements), ncclBfloat16,
                            wrap_rank(r - 1, n), rank_.comm, rank_.comm_stream));
        TPSIM_NCCL(ncclGroupEnd());
        TPSIM_CUDA(cudaEventRecord(event(arrived_, t + 1, p), rank_.comm_stream));
      }
    }
  }
}

void AsyncTpPipeline::enqueue_copy_engine_step(int step, const std::vector<AsyncTpPipeline*>& peers) {
  const int r = rank_.rank, n = config_.ranks, pieces = config_.pieces();
  const int64_t shard = config_.shard_rows(), piece = config_.piece_rows();
  const int64_t n_cols = config_.shape.n;
  TPSIM_CUDA(cudaSetDevice(rank_.device));
  if (config_.pattern == "allgather_gemm") {
    if (step >= n) return;
    const int owner = wrap_rank(r + step, n);  // every piece comes straight from its owner
    const auto piece_bytes = static_cast<size_t>(piece * config_.shape.k) * element_bytes(config_.operands);
    for (int p = 0; p < pieces; ++p) {
      const int64_t row = owner * shard + p * piece;
      if (step > 0) {
        TPSIM_CUDA(cudaMemcpyPeerAsync(x_rows(row), rank_.device, peers[static_cast<size_t>(owner)]->x_rows(row),
                                       peers[static_cast<size_t>(owner)]->rank_.device, piece_bytes, rank_.copy));
        TPSIM_CUDA(cudaEventRecord(event(arrived_, step, p), rank_.copy));
        TPSIM_CUDA(cudaStreamWaitEvent(rank_.compute, event(arrived_, step, p), 0));
      }
      piece_->run(x_rows(row), w_.get(), y_rows(y_.get(), row), rank_.compute);
    }
    return;
  }
  // GEMM + reduce-scatter: step t < n computes the partial of shard r + t + 1 (the last one, r's own,
  // straight into its slot); step t > 0 pulls the pieces that the rank `t` behind computed for r
  // in step t - 1; the last step sums the slots.
  const int64_t shard_elements = shard * n_cols;
  auto slot_rows = [&](int slot, int64_t row_in_shard) {
    return slots_.at(static_cast<size_t>(slot * shard_elements + row_in_shard * n_cols) * 2);
  };
  if (step < n) {
    const int target = wrap_rank(r + step + 1, n);
    for (int p = 0; p < pieces; ++p) {
      const int64_t row = target * shard + p * piece;
      void* partial = target == r ? slot_rows(r, p * piece) : y_rows(y_.get(), row);
      piece_->run(x_rows(row), w_.get(), partial, rank_.compute);
      TPSIM_CUDA(cudaEventRecord(event(computed_, step, p), rank_.compute));
    }
  }
  if (step > 0 && step < n) {
    const int source = wrap_rank(r - step, n);
    AsyncTpPipeline& from = *peers[static_cast<size_t>(source)];
    for (int p = 0; p < pieces; ++p) {
      TPSIM_CUDA(cudaStreamWaitEvent(rank_.copy, from.event(from.computed_, step - 1, p), 0));
      TPSIM_CUDA(cudaMemcpyPeerAsync(slot_rows(source, p * piece), rank_.device,
                                     from.y_rows(from.y_.get(), r * shard + p * piece), from.rank_.device,
                                     static_cast<size_t>(piece * n_cols) * 2, rank_.copy));
    }
  }
  if (step == n) {
    TPSIM_CUDA(cudaEventRecord(pulled_, rank_.copy));
    TPSIM_CUDA(cudaStreamWaitEvent(rank_.compute, pulled_, 0));
    sum_slices_bf16(out_.get(), slots_.get(), n, shard_elements, rank_.compute);
  }
}

}  // namespace tpsim::real
