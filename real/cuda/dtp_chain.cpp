// Streams and events of a chain's steps.
#include "real/cuda/dtp_chain.hpp"

#include <cmath>

#include "real/cuda/cuda_check.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {
namespace {

// Module m's partial and reduction live until module m + 1 + delta has added them: delta + 1 slots.
int slots_for(int delta) {
  return delta + 1;
}

}  // namespace

DtpChain::DtpChain(Rank& rank, const DtpConfig& config, uint64_t seed)
    : rank_(rank), config_(config), region_(rank.compute, {rank.comm_stream}) {
  const GemmCase& s = config.shape;
  const auto state_bytes = static_cast<size_t>(s.m * s.n) * 2;
  gemm_ = std::make_unique<GemmOp>(rank.lt, s, config.operands, rank.workspace.get(), kGemmWorkspaceBytes, s.n);
  h_ = DeviceBuffer(rank.device, state_bytes);
  h0_ = DeviceBuffer(rank.device, state_bytes);
  partials_ = DeviceBuffer(rank.device, static_cast<size_t>(slots_for(config.delta)) * state_bytes);
  reduced_ = DeviceBuffer(rank.device, static_cast<size_t>(slots_for(config.delta)) * state_bytes);
  fill_uniform(h0_.get(), ElementType::kBf16, s.m * s.n, seed, 0, rank.compute);
  // Weights of scale 1/sqrt(K) keep the residual stream's magnitude in range over long chains.
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.k));
  for (int l = 0; l < config.modules; ++l) {
    weights_.emplace_back(rank.device, static_cast<size_t>(s.n * s.k) * element_bytes(config.operands));
    fill_uniform(weights_.back().get(), config.operands, s.n * s.k,
                 seed + 1 + static_cast<uint64_t>(l) * 1000 + static_cast<uint64_t>(rank.rank), 0, rank.compute, scale);
    produced_.push_back(ordering_event());
    arrived_.push_back(ordering_event());
  }
  residual_done_ = ordering_event();
  TPSIM_CUDA(cudaStreamSynchronize(rank.compute));
}

DtpChain::~DtpChain() {
  cudaSetDevice(rank_.device);
  for (auto* set : {&produced_, &arrived_}) {
    for (cudaEvent_t e : *set) cudaEventDestroy(e);
  }
  cudaEventDestroy(residual_done_);
}

void* DtpChain::slot(const DeviceBuffer& buffer, int module) const {
  const auto state_bytes = static_cast<size_t>(state_elements()) * 2;
  return buffer.at(static_cast<size_t>(module % slots_for(config_.delta)) * state_bytes);
}

void DtpChain::begin() {
  TPSIM_CUDA(cudaMemcpyAsync(h_.get(), h0_.get(), h_.bytes(), cudaMemcpyDeviceToDevice, rank_.compute));
  region_.begin([this](cudaStream_t stream) { enqueue_barrier(rank_, stream); });
}

bool DtpChain::end() {
  return region_.end();
}

double DtpChain::elapsed_s() const {
  return region_.seconds();
}

void DtpChain::all_reduce(const void* in, void* out, cudaStream_t stream) {
  TPSIM_NCCL(ncclAllReduce(in, out, static_cast<size_t>(state_elements()), ncclBfloat16, ncclSum, rank_.comm, stream));
}

void DtpChain::enqueue_blocking_tp() {
  enqueue(model::DtpSchedule{config_.modules, 0}, false);
}

void DtpChain::enqueue_dtp(bool overlap) {
  enqueue(model::DtpSchedule{config_.modules, config_.delta}, overlap);
}

void DtpChain::enqueue(const model::DtpSchedule& schedule, bool overlap) {
  const cudaStream_t compute = rank_.compute;
  const cudaStream_t comm = overlap && !schedule.blocking() ? rank_.comm_stream : compute;
  const int64_t n = state_elements();
  for (const model::DtpStep& step : model::dtp_chain_steps(schedule)) {
    const int m = step.module;
    switch (step.kind) {
      case model::DtpStepKind::kAddPeerShare:
        TPSIM_CUDA(cudaStreamWaitEvent(compute, arrived_[static_cast<size_t>(m)], 0));
        add_difference_bf16(h_.get(), slot(reduced_, m), slot(partials_, m), n, compute);
        break;
      case model::DtpStepKind::kGemm:
        gemm_->run(h_.get(), weights_[static_cast<size_t>(m)].get(), slot(partials_, m), compute);
        TPSIM_CUDA(cudaEventRecord(produced_[static_cast<size_t>(m)], compute));
        break;
      case model::DtpStepKind::kAddOwn:
        add_bf16(h_.get(), h_.get(), slot(partials_, m), n, compute);
        break;
      case model::DtpStepKind::kReduce:
        TPSIM_CUDA(cudaStreamWaitEvent(comm, produced_[static_cast<size_t>(m)], 0));
        all_reduce(slot(partials_, m), slot(reduced_, m), comm);
        TPSIM_CUDA(cudaEventRecord(arrived_[static_cast<size_t>(m)], comm));
        break;
      case model::DtpStepKind::kAddReduced:
        add_bf16(h_.get(), h_.get(), slot(reduced_, m), n, compute);
        break;
      case model::DtpStepKind::kFinalReduce:
        TPSIM_CUDA(cudaEventRecord(residual_done_, compute));
        TPSIM_CUDA(cudaStreamWaitEvent(comm, residual_done_, 0));
        all_reduce(h_.get(), h_.get(), comm);
        break;
    }
  }
}

}  // namespace tpsim::real
