// HBM bytes a collective reads and writes per payload byte it moves over a link, from how NCCL's kernels stage it.
//
// Counted from NVIDIA/nccl v2.27.7 (src/device/all_gather.h, reduce_scatter.h, all_reduce.h, sendrecv.h,
// prims_simple.h, prims_ll.h, prims_ll128.h; src/include/device.h), without registered user buffers (PyTorch's
// default: NCCL's "direct" pointers are set only for registered buffers, prims_simple.h loadRecvConn/loadSendConn),
// so every step passes through the receiver's FIFO buffer. Each primitive reads each of its sources once and
// writes each of its destinations once (prims_simple.h genericOp, one reduceCopy over srcs and dsts):
//   send: read the input, write the peer's FIFO;           recv: read the own FIFO, write the output;
//   copySend: read the input, write the output and the peer's FIFO;
//   recvCopySend: read the own FIFO, write the output and the peer's FIFO;
//   recvReduceSend: read the own FIFO and the input, write the peer's FIFO;
//   recvReduceCopy(Send): read the own FIFO and the input, write the output (and the peer's FIFO).
// A FIFO byte is written once (by the sender, into the receiver's HBM; with P2P read, on A100, into the sender's)
// and read once, and a protocol's FIFO lines carry flags: w FIFO bytes per payload byte, Simple 1, LL 2 (16-byte
// lines of 8 data bytes and two 4-byte flags, union ncclLLFifoLine), LL128 16/15 (128-byte lines, one 8-byte flag
// per line: NCCL_LL128_DATAELEMS = NCCL_LL128_LINEELEMS - 1). Per rank and chunk D of an n-rank ring (out of place):
//   all-gather: copySend, n-2 recvCopySend, recv: (n-1) link chunks; 2w(n-1) FIFO + (n-1) output writes + 2 (the
//     own chunk read and written): 2w + 1 + 2/(n-1) per link byte, (3n-1)/(n-1) = 3.29 for Simple at 8 ranks;
//   reduce-scatter: send, n-2 recvReduceSend, recvReduceCopy: (n-1) link chunks; 2w(n-1) FIFO + n input reads + one
//     output write: the same 2w + 1 + 2/(n-1);
//   all-reduce: send, n-2 recvReduceSend, recvReduceCopySend, n-2 recvCopySend, recv: 2(n-1) link chunks;
//     4w(n-1) FIFO + n input reads + n output writes: 2w + n/(n-1), (3n-2)/(n-1) = 3.14 for Simple at 8 ranks;
//   send/recv (all-to-all, point-to-point): the sender reads the input (1), the receiver's FIFO is written and read
//     (2w) and it writes the output (1): 2 + 2w, 1 + 3 for Simple;
//   a copy engine's copy (or a kernel writing straight into the peer's buffer): a read and a write, 2.
// Ignores: L2 (a FIFO slot written and read back soon may never reach HBM: LL's 512 KiB per channel and peer,
// src/init.cc DEFAULT_LL_BUFFSIZE, most likely stays in the 50 MB L2 of an H100, so its factor is an upper bound), the
// NIC's reads and writes of the FIFO between nodes, and NCCL's tree, NVLS and the custom one-shot / two-shot / multimem
// kernels (counted as a copy).
#pragma once

#include "model/graph/op.hpp"
#include "model/graph/variant.hpp"

namespace tpsim::sim {

// HBM accesses of one copied byte: the read at the source and the write at the destination.
inline constexpr double kCopyHbmAccessesPerLinkByte = 2;

// FIFO bytes per payload byte of an NCCL protocol's lines (w above): Simple 1, LL 2, LL128 16/15; the unlabelled
// low-latency regime is taken as LL (as sm_sharing.cpp takes it).
double fifo_bytes_per_payload_byte(model::Protocol protocol);

// HBM bytes read and written at both ends, per payload byte over a link, by NCCL's ring `collective` over `ranks`
// ranks under `protocol` (all-gather and reduce-scatter 2w + 1 + 2/(n-1), all-reduce 2w + n/(n-1)).
double ring_hbm_accesses_per_link_byte(model::CollectiveKind collective, model::Protocol protocol, int ranks);

// The same for NCCL's point-to-point send/recv (all-to-all's too): 2 + 2w.
double point_to_point_hbm_accesses_per_link_byte(model::Protocol protocol);

// The most accesses any of the above gives per link byte (an all-gather under LL over 2 ranks: 7), for bounds.
inline constexpr double kMaxHbmAccessesPerLinkByte = 7;

}  // namespace tpsim::sim
