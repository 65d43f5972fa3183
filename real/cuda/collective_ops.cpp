// NCCL calls and their reference semantics.
#include "real/cuda/collective_ops.hpp"

#include "real/core/accuracy.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/gemm_check.hpp"

namespace tpsim::real {
namespace {

ncclDataType_t nccl_type(ElementType type) {
  return type == ElementType::kBf16 ? ncclBfloat16 : ncclFloat32;
}

const void* offset(const void* base, int64_t elements, ElementType type) {
  return static_cast<const char*>(base) + elements * static_cast<int64_t>(element_bytes(type));
}

}  // namespace

void enqueue_collective(const CollectiveCall& c, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
  const ncclDataType_t type = nccl_type(c.type);
  const auto send_count = static_cast<size_t>(c.counts.send), recv_count = static_cast<size_t>(c.counts.recv);
  switch (c.collective) {
    case Collective::kAllReduce:
      TPSIM_NCCL(ncclAllReduce(send, recv, send_count, type, ncclSum, comm, stream));
      break;
    case Collective::kAllGather:
      TPSIM_NCCL(ncclAllGather(send, recv, send_count, type, comm, stream));
      break;
    case Collective::kReduceScatter:
      TPSIM_NCCL(ncclReduceScatter(send, recv, recv_count, type, ncclSum, comm, stream));
      break;
    case Collective::kAllToAll: {
      const int64_t block = c.counts.send / c.ranks;
      TPSIM_NCCL(ncclGroupStart());
      for (int peer = 0; peer < c.ranks; ++peer) {
        TPSIM_NCCL(ncclSend(offset(send, peer * block, c.type), static_cast<size_t>(block), type, peer, comm, stream));
        TPSIM_NCCL(ncclRecv(const_cast<void*>(offset(recv, peer * block, c.type)), static_cast<size_t>(block), type,
                            peer, comm, stream));
      }
      TPSIM_NCCL(ncclGroupEnd());
      break;
    }
    case Collective::kSendRecv:
      TPSIM_NCCL(ncclGroupStart());
      TPSIM_NCCL(ncclSend(send, send_count, type, (c.rank + 1) % c.ranks, comm, stream));
      TPSIM_NCCL(ncclRecv(recv, recv_count, type, (c.rank + c.ranks - 1) % c.ranks, comm, stream));
      TPSIM_NCCL(ncclGroupEnd());
      break;
  }
}

double check_collective_outputs(const CollectiveCall& c, const void* recv, uint64_t seed) {
  constexpr int kSamples = 256;
  std::vector<double> expected, got;
  for (const auto& [unused, i] : sample_positions(1, c.counts.recv, kSamples, seed + static_cast<uint64_t>(c.rank))) {
    expected.push_back(collective_expected(c, seed, i));
    got.push_back(read_values(offset(recv, i, c.type), c.type, 1)[0]);
  }
  return relative_error(expected, got);
}

}  // namespace tpsim::real
