// PyTorch's context parallelism (cp_comm_type torch_all_gather): its SDPA blocks, merges, K/V gather and fp32 dK/dV
// passes, and the transient its attention holds instead of a buffer held throughout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "model/memory/memory_footprint.hpp"
#include "model/parallel/context_parallel.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveKind;
using model::OpKind;
using model::OpStage;

namespace {

// Llama-3.1-8B on TP 8 under sp: 4 query heads per rank, 1 K/V head, repeated to 4 as TorchTitan's Llama does.
constexpr int kTp = 8;
constexpr double kHeadDim = 128, kQueryHeads = 32.0 / kTp;

model::Workload torch_cp_workload(int64_t seq_len, int cp, model::CpCommType comm) {
  model::Workload w = test::cp_workload(1, seq_len, cp, comm, kTp);
  w.implementation.repeat_kv = true;
  return w;
}

model::LayerGraph graph_of(const model::Workload& w) {
  return test::llama8b_sp_graph(w, kTp);
}

std::vector<model::Op> ops_where(const model::LayerGraph& g, OpStage stage, OpKind kind, const std::string& part) {
  std::vector<model::Op> out;
  for (const model::Op& op : g.ops()) {
    if (op.stage == stage && op.kind == kind && op.name.find(part) != std::string::npos) out.push_back(op);
  }
  return out;
}

double flops_of(const std::vector<model::Op>& ops) {
  double total = 0;
  for (const model::Op& op : ops) total += op.flops;
  return total;
}

}  // namespace

TEST_CASE("torch_all_gather gathers K/V once per pass beside cp SDPA blocks and passes fp32 dK/dV after each one") {
  const int64_t seq = 16384;
  const int cp = 4;
  const double local = static_cast<double>(seq) / cp;
  const double n = local * kQueryHeads * kHeadDim;  // elements of the rank's Q, O and (repeated) K, V
  const model::LayerGraph torch = graph_of(torch_cp_workload(seq, cp, model::CpCommType::kTorchAllGather));
  const model::LayerGraph gather = graph_of(torch_cp_workload(seq, cp, model::CpCommType::kAllGather));

  // One all-gather of the whole sequence's repeated K and V in bf16 per pass, forward and backward.
  const auto forward_comm = ops_where(torch, OpStage::kForward, OpKind::kCollective, ".cp.");
  REQUIRE(forward_comm.size() == 1);
  CHECK(forward_comm[0].collective == CollectiveKind::kAllGather);
  CHECK(forward_comm[0].tensor_bytes == Approx(cp * 2.0 * n * 2.0));
  const auto backward_comm = ops_where(torch, OpStage::kBackward, OpKind::kCollective, ".cp.");
  REQUIRE(backward_comm.size() == 1 + cp);
  CHECK(backward_comm[0].collective == CollectiveKind::kAllGather);
  CHECK(backward_comm[0].tensor_bytes == Approx(forward_comm[0].tensor_bytes));
  for (int step = 1; step <= cp; ++step) {
    INFO("backward step " << step - 1);
    CHECK(backward_comm[step].collective == CollectiveKind::kSendRecv);  // permute_tensor to the next rank
    CHECK(backward_comm[step].tensor_bytes == Approx(2.0 * n * 4.0));    // dK and dV in fp32
  }

  // cp blocks each way, every one 1/cp of the work TE's single gathered block does (the load-balanced split).
  const auto blocks = ops_where(torch, OpStage::kForward, OpKind::kAttention, "attn.core.cp");
  REQUIRE(blocks.size() == cp);
  const double whole = flops_of(ops_where(gather, OpStage::kForward, OpKind::kAttention, "attn.core"));
  for (const model::Op& block : blocks) CHECK(block.flops == Approx(whole / cp));
  CHECK(flops_of(ops_where(torch, OpStage::kBackward, OpKind::kAttention, "attn.core.cp")) ==
        Approx(flops_of(ops_where(gather, OpStage::kBackward, OpKind::kAttention, "attn.core"))));

  // A merge after every block but the first: the bf16 block output cast to fp32 (2 + 4 bytes an element), then
  // out - block_out (8 + 4), the product with sigmoid(block_lse - lse) (4 + 4), out minus it (8 + 4); on the
  // log-sum-exp, one fp32 value a query and head: the difference and its sigmoid (8 + 4, 4 + 4), and
  // lse - logsigmoid(lse - block_lse) (8 + 4, 4 + 4, 8 + 4).
  const auto merges = ops_where(torch, OpStage::kForward, OpKind::kMemory, "attn.cp.merge.step");
  REQUIRE(merges.size() == cp);  // the first block's cast, then cp - 1 merges
  const double lse = local * kQueryHeads;
  for (size_t i = 1; i < merges.size(); ++i) {
    CHECK(merges[i].bytes_read == Approx((2.0 + 8 + 4 + 8) * n + (8.0 + 4 + 8 + 4 + 8 + 4) * lse));
    CHECK(merges[i].bytes_written == Approx((4.0 + 4 + 4 + 4) * n + 5 * 4.0 * lse));
  }
  CHECK(merges[0].bytes_written == Approx(4.0 * n));
}

TEST_CASE("torch_all_gather's gathered K/V and fp32 gradients live while the attention runs, not throughout") {
  const int64_t seq = 16384;
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::Variant sp = test::variant(model::TpMode::kSp);
  for (const int cp : {2, 4, 8}) {
    INFO("cp " << cp);
    const double local = static_cast<double>(seq) / cp;
    const double q = local * kQueryHeads * kHeadDim, kv = 2.0 * q;  // elements; K and V repeated to the query heads
    // The whole sequence's K/V in bf16, fp32 dQ, dK, dV, the fp32 dK/dV sent and received, the block's bf16 grads.
    const double transient = cp * kv * 2.0 + (q + kv) * 4.0 + 2.0 * kv * 4.0 + (q + kv) * 2.0;
    model::ContextParallel c;
    c.degree = cp;
    c.comm = model::CpCommType::kTorchAllGather;
    CHECK(model::context_parallel_attention_transient_bytes(c, local, kQueryHeads, kQueryHeads, kHeadDim) ==
          Approx(transient));
    CHECK(model::context_parallel_buffer_bytes(c, local, kQueryHeads, kQueryHeads, kHeadDim) == 0.0);

    const model::Workload torch = torch_cp_workload(seq, cp, model::CpCommType::kTorchAllGather);
    const model::Workload gather = torch_cp_workload(seq, cp, model::CpCommType::kAllGather);
    const model::MemoryFootprint m = model::memory_footprint(arch, torch, sp, kTp);
    const model::MemoryFootprint te = model::memory_footprint(arch, gather, sp, kTp);
    CHECK(m.buffer_bytes == 0.0);
    // The live block: the attention's tensors (its input and output rows, Q, unrepeated K/V, the core's output) with
    // the transient beside them, or the MLP's (input, gate, up, activation, output), whichever is larger.
    const double hidden = 4096, ffn = 14336.0 / kTp;
    const double attention = local * (2.0 * hidden + (kQueryHeads + 2.0 * 1.0) * kHeadDim + kQueryHeads * kHeadDim);
    const double mlp = local * (2.0 * hidden + 3.0 * ffn);
    const double grown = std::max(attention * 2.0 + transient, mlp * 2.0) - std::max(attention, mlp) * 2.0;
    CHECK(grown > 0);
    CHECK(m.activation_bytes - te.activation_bytes == Approx(grown).epsilon(1e-9));
  }
}
