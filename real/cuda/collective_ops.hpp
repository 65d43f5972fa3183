// Enqueuing one NCCL collective as nccl-tests runs it (all-to-all and send/recv as grouped
// point-to-point calls, which every NCCL since 2.7 has).
#pragma once

#include <nccl.h>

#include <cstdint>

#include "real/core/collective_reference.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {

void enqueue_collective(const CollectiveCall& call, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream);

// Relative error of 256 sampled output elements of call.rank against the host reference
// (synchronous; the collective must have completed).
double check_collective_outputs(const CollectiveCall& call, const void* recv, uint64_t seed);

}  // namespace tpsim::real
