// GEMM tiling and wave quantisation, roofline regimes, transport step costs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "input/model/hf_config.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

TEST_CASE("a grouped GEMM's waves count every problem's tiles, each problem tiled over its own rows") {
  const sim::CostModel cost = test::h100_cost();
  const int sms = cost.gpu().sm_count;  // 132
  // 16 experts of 200 rows each: ceil(200 / 128) = 2 tile rows per expert, not ceil(3200 / 128) = 25 in all.
  const model::GemmShape grouped{16 * 200, 256 * 6, 2048, 16};
  const sim::GemmTiling t = cost.gemm_tiling(grouped);
  CHECK(t.tiles == 16 * 2 * 6);
  CHECK(t.splits == 1);
  CHECK(t.waves == (16 * 2 * 6 + sms - 1) / sms);
  CHECK(t.tile_efficiency == Approx(16.0 * 200 * 256 * 6 / (16.0 * 2 * 128 * 256 * 6)));
  // Its weight gradient: one [2048, 1536] output per expert, each over its own 200 rows.
  const model::GemmShape wgrad{2048, 256 * 6, 16 * 200, 16, true};
  const sim::GemmTiling w = cost.gemm_tiling(wgrad);
  CHECK(w.tiles == 16 * (2048 / 128) * 6);
  CHECK(w.tile_efficiency == 1.0);
  CHECK(model::gemm_flops(wgrad) == model::gemm_flops(grouped));
  // Bytes: every expert's own weights (forward), every expert's own gradient (weight gradient).
  CHECK(model::gemm_bytes(grouped, 2.0) == 2.0 * (3200.0 * 2048 + 16.0 * 2048 * 1536 + 3200.0 * 1536));
  CHECK(model::gemm_bytes(wgrad, 2.0) == 2.0 * (2048.0 * 3200 + 3200.0 * 1536 + 16.0 * 2048 * 1536));
}

TEST_CASE("GEMM waves quantise over the SM count") {
  const sim::CostModel cost = test::h100_cost();
  const int sms = cost.gpu().sm_count;  // 132
  // 128 x 256 tiles: M = 128 * 12, N = 256 * 11 gives exactly 132 tiles, one full wave.
  const model::GemmShape full{128 * 12, 256 * 11, 4096};
  const sim::GemmTiling one = cost.gemm_tiling(full);
  CHECK(one.tiles == sms);
  CHECK(one.waves == 1);
  CHECK(one.wave_efficiency == 1.0);
  // One more tile row needs a second wave that is almost empty.
  const sim::GemmTiling two = cost.gemm_tiling({128 * 13, 256 * 11, 4096});
  CHECK(two.waves == 2);
  CHECK(two.wave_efficiency == Approx(143.0 / 264.0));
  const double flops = 2.0 * full.m * full.n * full.k;
  const double expected =
      cost.profile().gemm.overhead_s + flops / (cost.gpu().peak_bf16_flops * cost.profile().gemm.efficiency);
  CHECK(cost.gemm_seconds(full, 0) == Approx(expected));
}

TEST_CASE("small-M GEMMs are memory-bound and split K to fill the SMs") {
  const sim::CostModel cost = test::h100_cost();
  const model::GemmShape decode{1, 12288, 5376};
  const sim::GemmTiling t = cost.gemm_tiling(decode);
  CHECK(t.tiles == 48);  // 64 x 256 tiles over N = 12288
  CHECK(t.splits == 2);  // floor(132 / 48) = 2 <= K / 1024
  const double weight_bytes = 2.0 * 12288 * 5376;
  const double expected =
      cost.profile().gemm.overhead_s + weight_bytes / (cost.gpu().hbm_Bps * cost.profile().gemm.hbm_efficiency);
  CHECK(cost.gemm_seconds(decode, weight_bytes) == Approx(expected));
}

TEST_CASE("a skinny GEMM splits short K over every SM as GEMV kernels do, a taller one keeps whole K slices") {
  const sim::CostModel cost = test::h100_cost();
  // Llama-2-7B's down projection at TP 8 in a decode step: K = 11008 / 8 is under min_k_per_split.
  const model::GemmShape decode{1, 4096, 1376};
  const sim::GemmTiling t = cost.gemm_tiling(decode);
  CHECK(t.tiles == 16);  // 4096 / 256
  CHECK(t.splits == 8);  // floor(132 / 16), not capped by K / 1024 = 1
  const double weight_bytes = 2.0 * 4096 * 1376;
  const double streamed = weight_bytes / (cost.gpu().hbm_Bps * cost.profile().gemm.hbm_efficiency);
  CHECK(cost.gemm_seconds(decode, weight_bytes) == Approx(cost.profile().gemm.overhead_s + streamed));
  const model::GemmShape taller{128, 4096, 1376};  // 128-row tiles: K slices of at least 1024
  CHECK(cost.gemm_tiling(taller).splits == 1);
}

TEST_CASE("chunked GEMMs run below the efficiency of the whole GEMM") {
  const sim::CostModel cost = test::h100_cost();
  const model::GemmShape whole{65536, 768, 4096};
  const model::GemmShape piece{8192, 768, 4096};
  const double whole_rate = 2.0 * whole.m * whole.n * whole.k / cost.gemm_seconds(whole, 0);
  const double piece_rate = 2.0 * piece.m * piece.n * piece.k / cost.gemm_seconds(piece, 0);
  CHECK(piece_rate < 0.9 * whole_rate);
}

TEST_CASE("the fitted H100 profile predicts the public GEMM table within 7 percent") {
  const sim::CostModel cost = test::h100_cost();
  struct Row {
    int64_t m, n, k;
    double tflops;
  };
  // gemm_h100_bf16.csv (calibrate/data/public), the rows the profile was fitted on.
  for (const Row& r : {Row{4096, 4096, 4096, 788.72}, Row{8192, 8192, 8192, 797.51}, Row{128, 12288, 5376, 352.56},
                       Row{16, 12288, 5376, 46.54}}) {
    const double flops = 2.0 * r.m * r.n * r.k;
    const double bytes = 2.0 * (r.m * r.k + r.k * r.n + r.m * r.n);
    const double predicted_tflops = flops / cost.gemm_seconds({r.m, r.n, r.k}, bytes) / 1e12;
    INFO("M=" << r.m << " N=" << r.n << " K=" << r.k);
    CHECK(predicted_tflops == Approx(r.tflops).epsilon(0.07));
  }
}

TEST_CASE("an fp8 GEMM runs at the fp8 peak x fp8 efficiency when compute-bound and reads 1-byte operands") {
  const sim::CostModel cost = test::h100_cost();
  const sim::GpuSpec& gpu = cost.gpu();
  const sim::GemmParams& g = cost.profile().gemm;
  REQUIRE(g.fp8_efficiency);
  REQUIRE(gpu.peak_fp8_flops == Approx(1978.9e12));
  const model::GemmShape big{8192, 8192, 8192};
  const sim::GemmTiling t = cost.gemm_tiling(big);
  const double flops = 2.0 * 8192 * 8192 * 8192;
  const double fp8_bytes = 1.0 * 2 * 8192 * 8192 + 2.0 * 8192 * 8192;
  CHECK(
      cost.gemm_seconds(big, fp8_bytes, true) ==
      Approx(g.overhead_s + flops / (gpu.peak_fp8_flops * *g.fp8_efficiency * t.wave_efficiency * t.tile_efficiency)));
  // A decode GEMM (M = 1) is memory-bound: its time follows the bytes, about half of bf16's.
  const model::GemmShape decode{1, 12288, 5376};
  const double operands = 5376.0 + 5376.0 * 12288;
  const double fp8 = cost.gemm_seconds(decode, operands + 2.0 * 12288, true) - g.overhead_s;
  const double bf16 = cost.gemm_seconds(decode, 2.0 * operands + 2.0 * 12288) - g.overhead_s;
  CHECK(fp8 == Approx((operands + 2.0 * 12288) / (gpu.hbm_Bps * g.hbm_efficiency)));
  CHECK(fp8 / bf16 == Approx(0.5).epsilon(1e-3));
}

TEST_CASE("workload.dtype fp8 makes the linear layers' GEMMs fp8 and leaves attention and communication bf16") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::forward_workload(1, 1024, 1);
  const model::LayerGraph bf16 = model::build_layer_graph(arch, w, 8, test::variant(model::TpMode::kSp));
  w.dtype = model::Dtype::kFp8;
  const model::LayerGraph fp8 = model::build_layer_graph(arch, w, 8, test::variant(model::TpMode::kSp));
  REQUIRE(bf16.size() == fp8.size());
  int gemms = 0;
  for (model::OpId id = 0; id < fp8.size(); ++id) {
    const model::Op& a = bf16.op(id);
    const model::Op& b = fp8.op(id);
    INFO(b.name);
    if (b.kind == model::OpKind::kGemm) {
      ++gemms;
      CHECK(b.fp8);
      const double mn = static_cast<double>(b.gemm.m * b.gemm.n);
      CHECK(b.bytes_read == Approx(a.bytes_read / 2));  // e4m3 operands
      CHECK(b.bytes_written == Approx(2.0 * mn));       // bf16 output
    } else {
      CHECK_FALSE(b.fp8);
      CHECK(b.bytes_read == a.bytes_read);
      CHECK(b.tensor_bytes == a.tensor_bytes);
    }
  }
  CHECK(gemms >= 4);
  const sim::CostModel cost = test::h100_cost();
  CHECK(sim::simulate(fp8, cost).makespan_s < sim::simulate(bf16, cost).makespan_s);
}

TEST_CASE("fp8 on a GPU without fp8 tensor cores is refused where the scenario asks for it") {
  const std::string text =
      "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: a100-sxm}\ncalibration: {profile: h100-sxm, transfer: as_is}\n"
      "workload: {phase: forward, batch: 1, seq_len: 512, dtype: fp8, layers: 1}\n"
      "parallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}]\n";
  // The H100 profile (it has an fp8 rate) used as it is on the A100 (which has no fp8 peak).
  const model::Scenario s = model::parse_scenario(text, "t.yaml");
  CHECK_THROWS_WITH(sim::run_scenario(s), Catch::Contains("t.yaml:5:") &&
                                              Catch::Contains("workload.dtype fp8: GPU a100-sxm has no fp8 peak"));
}

TEST_CASE("fp8 attention runs at the fp8 peak and reads 1-byte Q, K and V, and the A100 refuses it") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-70b");
  const sim::CostModel cost = test::h100_cost();
  // The shipped profiles: FlashAttention-3's fp8 best (about 1.2 PFLOP/s on H100) x its bf16
  // causal-to-best ratio (600 / 740), over the 1978.9 TFLOP/s fp8 peak.
  REQUIRE(cost.profile().attention.fp8_efficiency);
  CHECK(*cost.profile().attention.fp8_efficiency == Approx(1200.0 / 1978.9 * 600 / 740).epsilon(1e-5));
  const auto attention_of = [&](model::Workload w, model::Dtype dtype) {
    w.attention_dtype = dtype;
    const model::LayerGraph g = model::build_layer_graph(arch, w, 8, test::variant(model::TpMode::kTp));
    for (const model::Op& op : g.ops()) {
      if (op.kind == model::OpKind::kAttention) return op;
    }
    FAIL("no attention op");
    return model::Op{};
  };
  // Prefill of 8192 tokens: compute-bound, faster by the ratio of the two rates.
  const model::Workload prefill = test::forward_workload(1, 8192, 1);
  const model::Op bf16 = attention_of(prefill, model::Dtype::kBf16);
  const model::Op fp8 = attention_of(prefill, model::Dtype::kFp8);
  CHECK(fp8.fp8);
  CHECK(fp8.flops == bf16.flops);
  // bf16: the causal rate over long sequences, an 8192-token square's mask on it (fp8 keeps one rate).
  const sim::AttentionParams& a = cost.profile().attention;
  const double h100_bf16 = 989.4e12 * a.efficiency / (1.0 + a.forward_causal_tokens / 8192);
  const double h100_fp8 = 1978.9e12 * *a.fp8_efficiency;
  CHECK(cost.kernel_cost(bf16).compute_s == Approx(bf16.flops / h100_bf16).epsilon(1e-3));
  CHECK(cost.kernel_cost(fp8).compute_s == Approx(bf16.flops / h100_fp8).epsilon(1e-3));
  // Decode at a 4096-token context: memory-bound on the KV cache, whose bytes halve.
  const model::Workload decode = test::decode_workload(16, 4096, 1);
  const model::Op kv16 = attention_of(decode, model::Dtype::kBf16);
  const model::Op kv8 = attention_of(decode, model::Dtype::kFp8);
  CHECK(kv8.bytes_read == Approx(kv16.bytes_read / 2));
  const double output = 16.0 * 1 * (64.0 / 8) * 128 * 2;  // bf16 output of one token per sequence
  const double appended = 2.0 * 16 * 1 * 128;             // one token's K and V per sequence, 1 byte
  CHECK(kv8.bytes_written == Approx(output + appended));
  CHECK(cost.kernel_seconds(kv8) < 0.6 * cost.kernel_seconds(kv16));
  // A scenario on a GPU without fp8 tensor cores is refused at the key that asks for it.
  const std::string text =
      "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: a100-sxm}\n"
      "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1,\n  attention_dtype: fp8}\n"
      "parallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}]\n";
  const model::Scenario s = model::parse_scenario(text, "t.yaml");
  CHECK_THROWS_WITH(sim::run_scenario(s), Catch::Contains("t.yaml:5:") &&
                                              Catch::Contains("workload.attention_dtype fp8: GPU a100-sxm has no fp8"));
  CHECK_FALSE(test::profile_preset("a100-sxm").attention.fp8_efficiency);
}

TEST_CASE("the mxfp8 recipe on a GPU without block-scaled fp8 tensor cores is refused at its key") {
  const std::string text =
      "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\n"
      "workload: {phase: train, batch: 1, seq_len: 512, dtype: fp8, fp8_recipe: mxfp8, layers: 1}\n"
      "parallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}]\n";
  const model::Scenario s = model::parse_scenario(text, "t.yaml");
  CHECK_THROWS_WITH(sim::run_scenario(s), Catch::Contains("t.yaml:4:") && Catch::Contains("compute capability 10.0") &&
                                              Catch::Contains("h100-sxm has 9.0"));
}

TEST_CASE(
    "a chunked gated delta rule costs its FLOPs at the profile's rate plus its chunk steps in waves of chains, and a "
    "decode step its state bytes at the decode efficiency") {
  const sim::CostModel cost(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  const sim::LinearAttentionParams l = *test::profile_preset("h200-sxm").linear_attention;
  const double peak = test::gpu_preset("h200-sxm").peak_bf16_flops;
  model::Op chunked;
  chunked.kind = model::OpKind::kAttention;
  chunked.linear_scan = {model::LinearKernel::kChunked, 128, 200};  // 200 chains: 2 waves over 132 SMs
  chunked.flops = 1e11;
  chunked.bytes_read = chunked.bytes_written = 1e6;
  const sim::KernelCost c = cost.kernel_cost(chunked);
  CHECK(c.compute_s == Approx(1e11 / (peak * l.efficiency) + 128 * 2 * l.chunk_step_s).epsilon(1e-12));
  CHECK_FALSE(c.memory_bound());
  model::Op backward = chunked;
  backward.stage = model::OpStage::kBackward;
  CHECK(cost.kernel_cost(backward).compute_s == Approx(c.compute_s * l.backward_ratio).epsilon(1e-12));
  model::Op recurrent = chunked;
  recurrent.linear_scan = {model::LinearKernel::kRecurrent, 1, 0};
  recurrent.flops = 1e6;
  recurrent.bytes_read = recurrent.bytes_written = 1e8;
  const sim::KernelCost r = cost.kernel_cost(recurrent);
  CHECK(r.memory_bound());
  CHECK(r.seconds() ==
        Approx(l.decode_overhead_s + 2e8 / (test::gpu_preset("h200-sxm").hbm_Bps * l.decode_hbm_efficiency))
            .epsilon(1e-12));
}

namespace {

// Runs scenario `text` (t.yaml) on the h100-sxm profile (which has no base) without its section from `section` up to
// `next`, and returns the error it is refused with.
std::string refusal_without_section(const std::string& section, const std::string& next, const std::string& text) {
  std::ifstream preset(std::string(TPSIM_SOURCE_DIR) + "/scenarios/presets/profiles/h100-sxm.yaml");
  std::string profile((std::istreambuf_iterator<char>(preset)), std::istreambuf_iterator<char>());
  const size_t from = profile.find(section + ":");
  REQUIRE(from != std::string::npos);
  profile.erase(from, profile.find(next + ":", from) - from);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tpsim_without_" + section);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "p.yaml") << profile;
  std::ofstream(dir / "t.yaml") << text;
  std::string error;
  try {
    sim::run_scenario(model::load_scenario((dir / "t.yaml").string()));
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::filesystem::remove_all(dir);
  return error;
}

}  // namespace

TEST_CASE("a hybrid model on a profile without a linear_attention section is refused at its calibration key") {
  const std::string error = refusal_without_section(
      "linear_attention", "nccl",
      "name: t\nmodel: qwen3-next-80b-a3b\nhardware: {gpu: h100-sxm}\ncalibration: {profile: p.yaml}\n"
      "workload: {phase: decode, batch: 8, context_len: 512, layers: 4}\nparallelism: {tp: 4, ep: 4}\n"
      "variants: [{name: sp, tp_mode: sp}]\n");
  CHECK_THAT(error, Catch::Contains("t.yaml:4:") && Catch::Contains("linear-attention layers") &&
                        Catch::Contains("has no linear_attention section"));
}

TEST_CASE("two-batch overlap runs one half-batch's expert all-to-all beside the other half's compute") {
  const model::ArchSpec arch = model::load_model_preset("qwen3-30b-a3b");
  model::Workload w = test::forward_workload(2, 2048, 1);
  w.phase = model::Phase::kPrefill;
  w.expert_parallel.degree = 8;
  model::Variant v = test::variant(model::TpMode::kSp);
  const model::LayerGraph whole = model::build_layer_graph(arch, w, 2, v);
  v.two_batch_overlap = true;
  const model::LayerGraph halves = model::build_layer_graph(arch, w, 2, v);
  // Each half dispatches half the copies.
  const model::Op& dispatch = test::op_named(halves, "mb0.L0.moe.dispatch");
  CHECK(dispatch.tensor_bytes == test::op_named(whole, "L0.moe.dispatch").tensor_bytes / 2);
  CHECK(test::op_named(halves, "mb1.L0.moe.dispatch").tensor_bytes == dispatch.tensor_bytes);
  // Interleaved: half 0's dispatch runs while half 1 routes and permutes its rows, half 1's combine while half 0
  // un-permutes.
  const sim::Timeline t = sim::simulate(halves, test::h100_cost());
  const auto overlaps = [&](const std::string& a, const std::string& b) {
    return test::spans_overlap(t, halves, a, b);
  };
  CHECK(overlaps("mb0.L0.moe.dispatch", "mb1.L0.moe.router"));
  CHECK(overlaps("mb1.L0.moe.combine", "mb0.L0.moe.unpermute"));
}

TEST_CASE(
    "a decode step's two-batch overlap sends each half's dispatch beside the other's attention projections and "
    "its combine beside the other's attention core, as SGLang's decode order does") {
  const model::ArchSpec arch = model::load_model_preset("qwen3-30b-a3b");
  model::Workload w = test::decode_workload(16, 1024, 2);
  w.expert_parallel.degree = 8;
  model::Variant v = test::variant(model::TpMode::kTp);  // attention data-parallel: no TP collective in the way
  v.two_batch_overlap = true;
  const model::LayerGraph g = model::build_layer_graph(arch, w, 1, v);
  const auto index = [&](const std::string& name) { return &test::op_named(g, name) - g.ops().data(); };
  // SGLang's stages (operations_strategy.py, _compute_moe_deepseek_blog_decode, delta 2) in its issue order: half 1's
  // attention projections, half 0's experts, half 1's attention core; then half 0's next layer the same way around
  // half 1's experts.
  CHECK(index("mb1.L0.attn.rope") < index("mb0.L0.moe.experts.gate_up_proj"));
  CHECK(index("mb0.L0.moe.experts.gate_up_proj") < index("mb1.L0.attn.core"));
  CHECK(index("mb1.L0.moe.dispatch") < index("mb0.L0.moe.residual"));
  CHECK(index("mb0.L1.attn.rope") < index("mb1.L0.moe.experts.gate_up_proj"));
  CHECK(index("mb1.L0.moe.experts.gate_up_proj") < index("mb0.L1.attn.core"));
  CHECK(index("mb0.L1.attn.core") < index("mb1.L0.moe.residual"));
  const sim::Timeline t = sim::simulate(g, test::h100_cost());
  const auto overlaps = [&](const std::string& a, const std::string& b) { return test::spans_overlap(t, g, a, b); };
  CHECK(overlaps("mb0.L0.moe.combine", "mb1.L0.attn.core"));
  CHECK(overlaps("mb1.L0.moe.combine", "mb0.L1.attn.core"));
  CHECK(overlaps("mb1.L0.moe.dispatch", "mb0.L1.attn.qkv_proj"));
}

TEST_CASE(
    "a decode step's two-batch overlap runs DeepSeek's dense layers half after half, then its MoE layers in "
    "SGLang's order: the shared expert beside the dispatch, the other half's query absorption before the experts") {
  const model::ArchSpec arch = model::load_model_preset("deepseek-v3");
  REQUIRE(!arch.moe.is_moe(2));  // its first three layers are dense
  REQUIRE(arch.moe.is_moe(3));
  model::Workload w = test::decode_workload(16, 1024, 5);
  w.expert_parallel.degree = 8;
  model::Variant v = test::variant(model::TpMode::kTp);
  v.two_batch_overlap = true;
  const model::LayerGraph g = model::build_layer_graph(arch, w, 1, v);
  const auto index = [&](const std::string& name) { return &test::op_named(g, name) - g.ops().data(); };
  // A dense layer: both halves' attention, then both halves' FFN.
  CHECK(index("mb1.L2.attn.core") < index("mb0.L2.ffn.gate_up_proj"));
  CHECK(index("mb0.L2.ffn.down_proj") < index("mb0.L3.attn.core"));
  // The MoE layers (operations_strategy.py: op_dispatch_a and op_shared_experts in one stage, the queries' absorption
  // in the attention's op_prepare): half 0's shared expert, half 1's projections up to the absorption, half 0's
  // experts, half 1's attention core; half 0's next projections before half 1's experts.
  CHECK(index("mb0.L3.moe.dispatch") < index("mb0.L3.moe.shared_expert.gate_up_proj"));
  CHECK(index("mb0.L3.moe.shared_expert.down_proj") < index("mb1.L3.attn.q_absorb"));
  CHECK(index("mb1.L3.attn.q_absorb") < index("mb0.L3.moe.experts.gate_up_proj"));
  CHECK(index("mb0.L3.moe.experts.down_proj") < index("mb1.L3.attn.core"));
  CHECK(index("mb0.L4.attn.q_absorb") < index("mb1.L3.moe.experts.gate_up_proj"));
  CHECK(index("mb1.L3.moe.experts.down_proj") < index("mb0.L4.attn.core"));
  // The last layer's half 1 closes with its experts and output, nothing of half 0 after.
  CHECK(index("mb0.L4.moe.residual") < index("mb1.L4.moe.experts.gate_up_proj"));
}

TEST_CASE("a DeepEP all-to-all takes the slower of its NVLink bytes at the port and its network bytes at the NIC") {
  const sim::CostProfile profile = test::profile_preset("h100-sxm");
  REQUIRE(profile.deepep);
  const sim::Fabric two_nodes = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2}, test::gpu_preset("h100-sxm"));
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), profile, two_nodes);
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = model::CollectiveKind::kAllToAll;
  op.algorithm = model::CollectiveAlgorithm::kDeepEp;
  op.group = model::CommGroup::kExpert;
  op.group_size = 16;
  op.tensor_bytes = 100e6;
  op.message_bytes = 40e6;
  const sim::CommPlan plan = sim::plan_deepep(op, cost);
  REQUIRE(plan.outside);
  const double nvlink_s = 100e6 / (cost.port_Bps() * profile.deepep->nvlink_efficiency);
  const double network_s = 40e6 / (two_nodes.nic_Bps * profile.deepep->rdma_efficiency);
  CHECK(plan.outside->network == (network_s > nvlink_s));
  const double link_Bps = plan.outside->network ? two_nodes.nic_Bps : cost.port_Bps();
  CHECK(plan.outside->link_bytes / link_Bps == Approx(std::max(nvlink_s, network_s)).epsilon(1e-12));
  CHECK(plan.outside->latency_s == 0);
  CHECK_FALSE(plan.nccl_call);
}

TEST_CASE("a DeepEP dispatcher on a profile without a deepep section is refused at moe.dispatcher") {
  const std::string error = refusal_without_section(
      "deepep", "linear_attention",
      "name: t\nmodel: qwen3-30b-a3b\nhardware: {gpu: h100-sxm}\ncalibration: {profile: p.yaml}\n"
      "workload: {phase: train, batch: 1, seq_len: 2048, layers: 1}\n"
      "parallelism: {tp: 2, dp: 4, ep: 8}\nmoe: {dispatcher: deepep}\nvariants: [{name: sp, tp_mode: sp}]\n");
  CHECK_THAT(error, Catch::Contains("t.yaml:7:") && Catch::Contains("no deepep section"));
}
