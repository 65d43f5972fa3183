// One way of running the TP layer: blocking TP, sequence parallel, async TP (chunked), or no comm.
#pragma once

#include <string>

namespace tpsim::model {

enum class TpMode { kTp, kSp, kAsync, kNoComm };
// sm: NCCL-like kernels that occupy SMs; copy_engine: cudaMemcpyPeer-like DMA, no SMs.
enum class Transport { kSm, kCopyEngine };
// ring: shards are relayed rank to rank; direct: each shard moves straight from its owner.
enum class ChunkOrder { kRing, kDirect };

struct Variant {
  std::string name;
  TpMode mode = TpMode::kSp;
  int chunks = 1;                                // async only: GEMM pieces per AG+GEMM / GEMM+RS
  Transport transport = Transport::kCopyEngine;  // async only
  ChunkOrder order = ChunkOrder::kDirect;        // async only; direct is what PyTorch's micro-pipeline TP does
  bool boundary_overlap = false;                 // async only: all-gather before the RMSNorm
};

std::string to_string(TpMode mode);
std::string to_string(Transport transport);
std::string to_string(ChunkOrder order);

// Empty when `chunks` suits tp ranks, else why not: chunks must be 1, divide tp, or be a multiple of it.
std::string check_chunks(int chunks, int tp);

}  // namespace tpsim::model
