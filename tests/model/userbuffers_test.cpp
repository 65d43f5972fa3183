// Transformer Engine's userbuffers TP overlap (implementation.async_tp userbuffers): each GEMM's method (ring
// exchanges forward and for the row-parallel data gradients, bulk kernels in the column-parallel backward), its
// pieces, bytes and SMs against counts derived here, and the refusals of variants TE does not run.
#include <catch2/catch.hpp>
#include <string>

#include "base/input_error.hpp"
#include "input/presets.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::Op;
using model::OpKind;

namespace {

const model::ArchSpec& llama8b() {
  static const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  return arch;
}

// Rank 0's ops whose names contain `part`.
std::vector<const Op*> containing(const model::LayerGraph& g, const std::string& part) {
  std::vector<const Op*> out;
  for (const Op& op : g.ops()) {
    if (op.name.find(part) != std::string::npos) out.push_back(&op);
  }
  return out;
}

bool reads(const model::LayerGraph& g, const Op* op, const Op* input) {
  const auto id = static_cast<model::OpId>(input - g.ops().data());
  for (const model::Dep& d : op->deps) {
    if (d.op == id && d.data) return true;
  }
  return false;
}

constexpr int kTp = 4;
constexpr int64_t kTokens = 2048;

// One fp8 (tensorwise) training layer of Llama-3.1-8B under the megatron-te preset's userbuffers at tp 4, with the
// 70B recipe's bulk SMs.
model::LayerGraph userbuffers_layer() {
  model::Workload w = test::train_workload(1, kTokens, 1);
  w.implementation = model::implementation_preset("megatron-te");
  w.implementation.userbuffer_sms = {.qkv_dgrad = 4, .qkv_wgrad = 24, .fc1_dgrad = 2, .fc1_wgrad = 4};
  w.dtype = model::Dtype::kFp8;
  w.fp8_recipe = model::Fp8Recipe::kTensorwise;
  return model::build_layer_graph(llama8b(), w, kTp, test::variant(model::TpMode::kAsync, kTp));
}

std::string scenario_text(const std::string& variant) {
  return "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nimplementation: megatron-te\n"
         "workload: {phase: train, batch: 1, seq_len: 1024, layers: 1}\nparallelism: {tp: 4}\nvariants: [" +
         variant + "]\n";
}

}  // namespace

TEST_CASE(
    "userbuffers' forward all-gathers relay fp8 shards in a ring, one GEMM piece per shard, and its forward "
    "reduce-scatters send each bf16 piece straight to its owner",
    "[model][userbuffers]") {
  const model::LayerGraph g = userbuffers_layer();
  const double hidden = static_cast<double>(llama8b().hidden);
  const double shard_rows = static_cast<double>(kTokens) / kTp;
  for (const std::string linear : {"attn.qkv_proj", "ffn.gate_up_proj"}) {
    // Ring exchange (split_overlap_ag): tp - 1 steps per linear, each passing one shard to the next rank.
    const std::vector<const Op*> steps = containing(g, "L0." + linear + ".ag.step");
    REQUIRE(steps.size() == kTp - 1);
    for (const Op* step : steps) {
      CHECK(step->kind == OpKind::kExchange);
      CHECK(step->send_offset == 1);
      CHECK(step->recv_offset == -1);
      CHECK(step->transport == model::Transport::kCopyEngine);
      CHECK(step->message_bytes == Approx(shard_rows * hidden * 1.0));  // fp8: TE's fp8_buf
    }
    for (int piece = 0; piece < kTp; ++piece)
      CHECK(test::op_named(g, "L0." + linear + ".piece" + std::to_string(piece)).kind == OpKind::kGemm);
    CHECK(containing(g, "L0." + linear + ".piece" + std::to_string(kTp)).empty());
    CHECK(containing(g, "L0." + linear + ".all_gather").empty());
  }
  for (const std::string linear : {"attn.o_proj", "ffn.down_proj"}) {
    // split_overlap_rs: piece i goes to rank + i + 1, the rank's own piece last, a reduce over the tp partials.
    const std::vector<const Op*> sends = containing(g, "L0." + linear + ".rs.send");
    REQUIRE(sends.size() == kTp - 1);
    for (size_t i = 0; i < sends.size(); ++i) {
      CHECK(sends[i]->send_offset == static_cast<int>(i) + 1);
      CHECK(sends[i]->message_bytes == Approx(shard_rows * hidden * 2.0));  // bf16
    }
    CHECK(containing(g, "L0." + linear + ".rs.add").empty());
    const std::vector<const Op*> reduce = containing(g, "L0." + linear + ".rs.reduce");
    REQUIRE(reduce.size() == 1);
    CHECK(reduce[0]->bytes_read == Approx(kTp * shard_rows * hidden * 2.0));
  }
}

TEST_CASE(
    "userbuffers' backward gathers the row-parallel output gradients in fp8 rings and runs the column-parallel "
    "linears' bulk all-gather and reduce-scatter beside their GEMMs on the recipe's SMs",
    "[model][userbuffers]") {
  const model::LayerGraph g = userbuffers_layer();
  const double hidden = static_cast<double>(llama8b().hidden);
  const double rows = static_cast<double>(kTokens);
  CHECK(containing(g, "L0.attn.o_proj.dgrad.ag.step").size() == kTp - 1);
  CHECK(containing(g, "L0.attn.o_proj.dgrad.ag.step")[0]->message_bytes == Approx(rows / kTp * hidden));
  struct Bulk {
    std::string linear;
    int gather_sms, scatter_sms;
  };
  for (const Bulk& bulk : {Bulk{"attn.qkv_proj", 4, 24}, Bulk{"ffn.gate_up_proj", 2, 4}}) {
    const std::vector<const Op*> gather = containing(g, "L0." + bulk.linear + ".input.all_gather");
    const std::vector<const Op*> scatter = containing(g, "L0." + bulk.linear + ".dgrad.reduce_scatter");
    REQUIRE(gather.size() == 1);
    REQUIRE(scatter.size() == 1);
    CHECK(gather[0]->kind == OpKind::kCollective);
    CHECK(gather[0]->tensor_bytes == Approx(rows * hidden * 1.0));  // the saved fp8 rows, gathered
    CHECK(gather[0]->comm_sms == bulk.gather_sms);
    CHECK(scatter[0]->tensor_bytes == Approx(rows * hidden * 2.0));  // the bf16 data gradient
    CHECK(scatter[0]->comm_sms == bulk.scatter_sms);
    CHECK(containing(g, "L0." + bulk.linear + ".dgrad.rs.").empty());  // no pipelined reduce-scatter
    // The weight gradient reads the regathered fp8 rows (transposed for it); the data gradient runs whole.
    const Op& transpose = test::op_named(g, "L0." + bulk.linear + ".wgrad.x.transpose");
    CHECK(reads(g, &transpose, gather[0]));
    CHECK(reads(g, &test::op_named(g, "L0." + bulk.linear + ".wgrad"), &transpose));
    CHECK(test::op_named(g, "L0." + bulk.linear + ".dgrad").kind == OpKind::kGemm);
    CHECK(containing(g, "L0." + bulk.linear + ".dgrad.piece").empty());
  }
}

TEST_CASE("userbuffers refuses chunk counts, orders and boundary overlap Transformer Engine does not run",
          "[model][userbuffers]") {
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text("{name: a, tp_mode: async, chunks: 8}"), "t.yaml"),
                    Catch::Contains("t.yaml:7:") && Catch::Contains("chunks must be tp=4"));
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text("{name: a, tp_mode: async, order: ring}"), "t.yaml"),
                    Catch::Contains("t.yaml:7:") && Catch::Contains("leave order out"));
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text("{name: a, tp_mode: async, boundary_overlap: true}"), "t.yaml"),
                    Catch::Contains("t.yaml:7:") && Catch::Contains("gathers the normed input"));
  CHECK_NOTHROW(model::parse_scenario(scenario_text("{name: a, tp_mode: async}"), "t.yaml"));
  const std::string sms =
      "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\n"
      "implementation: {preset: megatron-te, userbuffer_sms: {qkv_dgrad: 0}}\n"
      "workload: {phase: train, batch: 1, seq_len: 1024, layers: 1}\nparallelism: {tp: 4}\n"
      "variants: [{name: a, tp_mode: async}]\n";
  CHECK_THROWS_WITH(model::parse_scenario(sms, "t.yaml"),
                    Catch::Contains("t.yaml:4:") && Catch::Contains("userbuffer_sms.qkv_dgrad"));
}
