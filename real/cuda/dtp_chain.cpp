// Streams and events of the blocking and delayed chains.
#include "real/cuda/dtp_chain.hpp"

#include <cmath>

#include "real/cuda/cuda_check.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {

DtpChain::DtpChain(Rank& rank, const DtpConfig& config, uint64_t seed)
    : rank_(rank), config_(config), region_(rank.compute, {rank.comm_stream}) {
  const GemmCase& s = config.shape;
  const auto state_bytes = static_cast<size_t>(s.m * s.n) * 2;
  const int slots = config.delta + 1;
  gemm_ = std::make_unique<GemmOp>(rank.lt, s, config.operands, rank.workspace.get(), kGemmWorkspaceBytes, s.n);
  h_ = DeviceBuffer(rank.device, state_bytes);
  h0_ = DeviceBuffer(rank.device, state_bytes);
  partials_ = DeviceBuffer(rank.device, static_cast<size_t>(slots) * state_bytes);
  reduced_ = DeviceBuffer(rank.device, static_cast<size_t>(slots) * state_bytes);
  fill_uniform(h0_.get(), ElementType::kBf16, s.m * s.n, seed, 0, rank.compute);
  // Weights of scale 1/sqrt(K) keep the residual stream's magnitude in range over long chains.
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.k));
  for (int l = 0; l < config.modules; ++l) {
    weights_.emplace_back(rank.device, static_cast<size_t>(s.n * s.k) * element_bytes(config.operands));
    fill_uniform(weights_.back().get(), config.operands, s.n * s.k,
                 seed + 1 + static_cast<uint64_t>(l) * 1000 + static_cast<uint64_t>(rank.rank), 0, rank.compute, scale);
    cudaEvent_t e = nullptr;
    TPSIM_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    produced_.push_back(e);
    TPSIM_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    arrived_.push_back(e);
  }
  TPSIM_CUDA(cudaStreamSynchronize(rank.compute));
}

DtpChain::~DtpChain() {
  cudaSetDevice(rank_.device);
  for (auto* set : {&produced_, &arrived_}) {
    for (cudaEvent_t e : *set) cudaEventDestroy(e);
  }
}

void* DtpChain::slot(const DeviceBuffer& buffer, int module) const {
  const auto state_bytes = static_cast<size_t>(state_elements()) * 2;
  return buffer.at(static_cast<size_t>(module % (config_.delta + 1)) * state_bytes);
}

void DtpChain::begin() {
  TPSIM_CUDA(cudaMemcpyAsync(h_.get(), h0_.get(), h_.bytes(), cudaMemcpyDeviceToDevice, rank_.compute));
  region_.begin();
}

void DtpChain::end() {
  region_.end();
}

double DtpChain::elapsed_s() const {
  return region_.seconds();
}

void DtpChain::all_reduce(int module, cudaStream_t stream) {
  TPSIM_NCCL(ncclAllReduce(slot(partials_, module), slot(reduced_, module), static_cast<size_t>(state_elements()),
                           ncclBfloat16, ncclSum, rank_.comm, stream));
}

void DtpChain::enqueue_blocking_tp() {
  for (int l = 0; l < config_.modules; ++l) {
    gemm_->run(h_.get(), weights_[static_cast<size_t>(l)].get(), slot(partials_, l), rank_.compute);
    all_reduce(l, rank_.compute);
    add_bf16(h_.get(), h_.get(), slot(reduced_, l), state_elements(), rank_.compute);
  }
}

void DtpChain::enqueue_dtp(bool overlap) {
  const cudaStream_t comm = overlap ? rank_.comm_stream : rank_.compute;
  auto add_late_share = [&](int j) {
    TPSIM_CUDA(cudaStreamWaitEvent(rank_.compute, arrived_[static_cast<size_t>(j)], 0));
    add_difference_bf16(h_.get(), slot(reduced_, j), slot(partials_, j), state_elements(), rank_.compute);
  };
  const int modules = config_.modules, delta = config_.delta;
  for (int l = 0; l < modules; ++l) {
    gemm_->run(h_.get(), weights_[static_cast<size_t>(l)].get(), slot(partials_, l), rank_.compute);
    TPSIM_CUDA(cudaEventRecord(produced_[static_cast<size_t>(l)], rank_.compute));
    TPSIM_CUDA(cudaStreamWaitEvent(comm, produced_[static_cast<size_t>(l)], 0));
    all_reduce(l, comm);
    TPSIM_CUDA(cudaEventRecord(arrived_[static_cast<size_t>(l)], comm));
    add_bf16(h_.get(), h_.get(), slot(partials_, l), state_elements(), rank_.compute);
    if (l + 1 - delta >= 0) add_late_share(l + 1 - delta);
  }
  for (int j = std::max(0, modules + 1 - delta); j < modules; ++j) add_late_share(j);
}

}  // namespace tpsim::real
