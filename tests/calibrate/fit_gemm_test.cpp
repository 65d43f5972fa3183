// The GEMM fits recover known efficiencies from the times they generate (bf16 and fp8), and the grouped-GEMM and
// gated-delta-rule constants are the published timings' rates.
#include <catch2/catch.hpp>

#include "base/measurement.hpp"
#include "base/units.hpp"
#include "calibrate/fits/component_fits.hpp"
#include "calibrate/fits/gemm_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/sources/csv_table.hpp"
#include "input/profile/profile_writer.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/layers/linear_attention.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

TEST_CASE("the GEMM fit recovers efficiency, HBM efficiency and overhead from model-generated times") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  sim::CostProfile truth;
  truth.gemm.efficiency = 0.72;
  truth.gemm.hbm_efficiency = 0.8;
  truth.gemm.overhead_s = 3e-6;
  const sim::CostModel cost(gpu, truth);
  std::vector<calibrate::GemmSample> samples;
  for (const model::GemmShape& s : std::vector<model::GemmShape>{
           {1024, 1024, 1024}, {4096, 4096, 4096}, {8192, 8192, 8192}, {1, 12288, 5376}, {16, 12288, 5376}}) {
    const double bytes = 2.0 * (s.m * s.k + s.k * s.n + s.m * s.n);
    samples.push_back({s, cost.gemm_seconds(s, bytes)});
  }
  const calibrate::GemmFit fit = calibrate::fit_gemm(samples, gpu, sim::GemmParams{});
  CHECK(fit.params.efficiency == Approx(0.72).epsilon(1e-3));
  CHECK(fit.params.hbm_efficiency == Approx(0.8).epsilon(1e-3));
  CHECK(fit.params.overhead_s == Approx(3e-6).epsilon(1e-2));
  CHECK(fit.max_abs_error_pct < 0.5);
  CHECK_THROWS_WITH(calibrate::fit_gemm({samples[0], samples[1]}, gpu, sim::GemmParams{}),
                    Contains("at least 3 measured shapes"));
}

TEST_CASE("fp8 GEMM points fit gemm.fp8_efficiency, and without them it follows the published fp8 / bf16 ratio") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  sim::CostProfile truth = test::profile_preset("h100-sxm");
  truth.gemm.fp8_efficiency = 0.62;
  const sim::CostModel cost(gpu, truth);
  std::vector<calibrate::Measurement> points;
  int line = 0;
  for (int64_t size : {2048, 4096, 8192, 16384}) {
    const double bytes = 1.0 * 2 * size * size + 2.0 * size * size;
    const double t = cost.gemm_seconds({size, size, size}, bytes, true);
    points.push_back(calibrate::parse_measurement(R"({"kind":"gemm","gpu":"h100-sxm","dtype":"fp8","m":)" +
                                                      std::to_string(size) + R"(,"n":)" + std::to_string(size) +
                                                      R"(,"k":)" + std::to_string(size) + R"(,"median_s":)" +
                                                      model::format_number("%.12g", t) + "}",
                                                  "fp8.jsonl:" + std::to_string(++line)));
  }
  const sim::CostProfile h100 = test::profile_preset("h100-sxm");
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &h100, "h100");
  REQUIRE(fit.profile.gemm.fp8_efficiency);
  CHECK(*fit.profile.gemm.fp8_efficiency == Approx(0.62).epsilon(1e-3));
  CHECK(sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"fp8.jsonl"}))
            .find("fp8_source: \"fitted on fp8 GEMMs") != std::string::npos);
  // The shipped H100 profile: 70.9% / 80.3% of its bf16 efficiency (max-achievable matmul, gemm_mamf.csv).
  CHECK(*h100.gemm.fp8_efficiency == Approx(h100.gemm.efficiency * 70.9 / 80.3).epsilon(1e-5));
}

TEST_CASE(
    "the grouped-GEMM ratio is the published grouped GEMMs' rate over the H100 profile's dense rate for their "
    "tiles") {
  const calibrate::CsvTable table = calibrate::CsvTable::read_file(std::string(TPSIM_SOURCE_DIR) +
                                                                   "/calibrate/data/public/grouped_gemm_h100_bf16.csv");
  REQUIRE(table.rows() == 2);
  sim::CostProfile dense = test::profile_preset("h100-sxm");
  dense.gemm.grouped_efficiency = dense.gemm.efficiency;  // grouped tiles at a dense GEMM's rate
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), dense);
  double ratio = 0;
  for (size_t row = 0; row < table.rows(); ++row) {
    const int64_t groups = table.integer(row, "groups");
    const model::GemmShape shape{groups * table.integer(row, "m_per_group"), table.integer(row, "n"),
                                 table.integer(row, "k"), groups};
    const double dense_tflops = model::gemm_flops(shape) / cost.gemm_compute_seconds(shape, false) / 1e12;
    ratio += table.number(row, "tflops") / dense_tflops / static_cast<double>(table.rows());
  }
  CHECK(calibrate::kGroupedGemmRatio == Approx(ratio).margin(5e-5));  // the constant keeps 4 digits
  const sim::CostProfile shipped = test::profile_preset("h100-sxm");
  REQUIRE(shipped.gemm.grouped_efficiency);
  CHECK(*shipped.gemm.grouped_efficiency ==
        Approx(shipped.gemm.efficiency * calibrate::kGroupedGemmRatio).epsilon(1e-5));
}

namespace {

// A public gated-delta-rule timing row (gated_delta_rule_hopper.csv), as the cost model counts its work.
struct DeltaRulePoint {
  double seconds = 0, flops = 0, steps = 0;  // steps: chunk steps along the longest chain, times its waves
  double bytes = 0;                          // recurrent rows: the decode op's HBM bytes
};

DeltaRulePoint delta_rule_point(const calibrate::CsvTable& table, size_t row) {
  DeltaRulePoint p;
  p.seconds = table.number(row, "time_us") * 1e-6;
  const int64_t batch = table.integer(row, "batch"), tokens = table.integer(row, "tokens_per_sequence");
  const int64_t value_heads = table.integer(row, "value_heads"), dk = table.integer(row, "key_dim"),
                dv = table.integer(row, "value_dim");
  const std::string gpu = table.at(row, "gpu") == "H800"   ? "h800-sxm"
                          : table.at(row, "gpu") == "H100" ? "h100-sxm"
                                                           : "h200-sxm";
  p.flops = static_cast<double>(batch * tokens * value_heads) * model::chunked_delta_rule_flops_per_token(dk, dv);
  const int64_t chains = batch * value_heads * (dv / model::kDeltaRuleValueBlock);
  const int64_t sms = test::gpu_preset(gpu).sm_count;
  p.steps = static_cast<double>(tokens / model::kDeltaRuleChunk * ((chains + sms - 1) / sms));
  if (table.at(row, "kernel") == "recurrent") {
    // Qwen3-Next's shapes at the row's per-rank heads (TP 4): the decode op as tpsim builds it.
    REQUIRE(table.integer(row, "value_heads") == 32 / 4);
    model::Workload w = test::decode_workload(batch, 4096, 1);
    w.expert_parallel.degree = 4;
    const model::LayerGraph g = model::build_layer_graph(model::load_model_preset("qwen3-next-80b-a3b"), w, 4,
                                                         test::variant(model::TpMode::kSp));
    for (const model::Op& op : g.ops()) {
      if (op.name == "L0.linear_attn.delta_rule") p.bytes = op.bytes_read + op.bytes_written;
    }
    REQUIRE(p.bytes > 0);
  }
  return p;
}

}  // namespace

TEST_CASE(
    "the gated delta rule's rates are the public Hopper timings' differences: the chunked rate and chunk step, the "
    "decode kernel's bandwidth and overhead") {
  const calibrate::CsvTable table = calibrate::CsvTable::read_file(
      std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/public/gated_delta_rule_hopper.csv");
  REQUIRE(table.rows() == 12);
  // Rows 0-5: the Hopper forward and decode rows; 6-11: FLA's GB200 forward, forward + backward pairs.
  std::vector<DeltaRulePoint> p;
  for (size_t row = 0; row < 6; ++row) p.push_back(delta_rule_point(table, row));
  // Chunked rows in pairs (H800: 0, 1; H100: 2, 3), t = F / rate + steps x step plus a per-call constant that
  // each pair's difference cancels: two equations in 1 / rate and step.
  const double f1 = p[0].flops - p[1].flops, s1 = p[0].steps - p[1].steps, t1 = p[0].seconds - p[1].seconds;
  const double f2 = p[3].flops - p[2].flops, s2 = p[3].steps - p[2].steps, t2 = p[3].seconds - p[2].seconds;
  const double det = f1 * s2 - f2 * s1;
  const double inverse_rate = (t1 * s2 - t2 * s1) / det, step = (f1 * t2 - f2 * t1) / det;
  const double peak = test::gpu_preset("h800-sxm").peak_bf16_flops;
  // Each constant keeps 4 significant digits: the margins are half a unit in the last.
  CHECK(calibrate::kDeltaRuleEfficiency == Approx(1.0 / inverse_rate / peak).margin(5e-6));
  CHECK(calibrate::kDeltaRuleChunkStepUs == Approx(step * 1e6).margin(5e-5));
  // Decode rows: a line in the op's bytes.
  const double slope = (p[5].seconds - p[4].seconds) / (p[5].bytes - p[4].bytes);
  const double hbm = test::gpu_preset("h200-sxm").hbm_Bps;
  CHECK(calibrate::kDeltaRuleDecodeHbmEfficiency == Approx(1.0 / slope / hbm).margin(5e-5));
  CHECK(calibrate::kDeltaRuleDecodeOverheadUs == Approx((p[4].seconds - slope * p[4].bytes) * 1e6).margin(5e-3));
  // The backward over the forward: the mean of the GB200 pairs' (forward + backward - forward) / forward.
  double ratio = 0;
  for (size_t row = 6; row < 12; row += 2) {
    REQUIRE(table.at(row, "kernel") == "chunked");
    REQUIRE(table.at(row + 1, "kernel") == "chunked_forward_backward");
    const double forward = table.number(row, "time_us"), both = table.number(row + 1, "time_us");
    ratio += (both - forward) / forward / 3.0;
  }
  CHECK(calibrate::kDeltaRuleBackwardRatio == Approx(ratio).margin(5e-4));
  // Every shipped profile carries them.
  for (const char* gpu : {"h100-sxm", "h200-sxm", "a100-sxm", "b200"}) {
    const sim::CostProfile shipped = test::profile_preset(gpu);
    REQUIRE(shipped.linear_attention);
    CHECK(shipped.linear_attention->efficiency == calibrate::kDeltaRuleEfficiency);
    CHECK(shipped.linear_attention->decode_overhead_s == Approx(calibrate::kDeltaRuleDecodeOverheadUs * 1e-6));
    CHECK(shipped.linear_attention->backward_ratio == calibrate::kDeltaRuleBackwardRatio);
  }
}
