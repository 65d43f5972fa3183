// tpsim validate's core: composite measurements predicted by the simulator, their errors, and the
// held-out split.
#include <catch2/catch.hpp>

#include <map>

#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/validation/composite_validation.hpp"
#include "composite_points.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"
#include "test_support.hpp"

using namespace tpsim;
using calibrate::Measurement;

using test::composite;

namespace {

// A set covering every composite kind and transport, its times written by the simulator itself.
std::vector<Measurement> simulated_measurements(const sim::CostModel& cost, const sim::EngineOptions& options) {
  std::vector<Measurement> out;
  Measurement copy = composite("overlap", "copy_kernel", 8192, 8192, 8192, 1);
  copy.bytes = 256.0 * (1 << 20);
  out.push_back(copy);
  Measurement ce = composite("overlap", "memcpy_device", 8192, 3584, 4096, 1);
  ce.bytes = 1024.0 * (1 << 20);
  out.push_back(ce);
  Measurement ag = composite("overlap", "allgather", 8192, 8192, 8192, 8);
  ag.bytes = 256.0 * (1 << 20);
  out.push_back(ag);
  for (const char* transport : {"nccl", "copy_engine"}) {
    for (const char* pattern : {"allgather_gemm", "gemm_reducescatter"}) {
      Measurement a = composite("async_tp", pattern, 16384, 3584, 4096, 8);
      a.chunks = 16;
      a.transport = transport;
      out.push_back(a);
    }
  }
  Measurement d = composite("dtp", "chain", 4096, 8192, 1024, 8);
  d.modules = 8;
  d.delta = 2;
  out.push_back(d);
  for (Measurement& x : out) {
    const calibrate::CompositePrediction p = calibrate::predict_composite(x, cost, options);
    x.median_s = x.p10_s = x.p90_s = p.time_s;
    x.baseline_s = p.baseline_s;
    x.gemm_alone_s = p.gemm_alone_s;
    x.partner_alone_s = p.partner_alone_s;
    x.gemm_overlapped_s = p.gemm_overlapped_s;
  }
  return out;
}

}  // namespace

TEST_CASE("validate reports zero error on measurements the simulator made with the same profile") {
  const sim::CostModel cost = test::h100_cost();
  const sim::EngineOptions options = sim::launch_costs(4e-6);
  const std::vector<Measurement> measured = simulated_measurements(cost, options);
  const calibrate::CompositeValidation v = calibrate::validate_composites(
      measured, [&](const std::string&) { return cost; }, options);
  REQUIRE(v.rows.size() == measured.size());
  CHECK(v.skipped.empty());
  CHECK(v.max_abs_time_error_pct == Approx(0).margin(1e-9));
  CHECK(v.max_abs_speedup_error_pp == Approx(0).margin(1e-9));
}

TEST_CASE("measurements 25% slower give a -20% time error and the matching speedup error") {
  const sim::CostModel cost = test::h100_cost();
  const sim::EngineOptions options{};
  std::vector<Measurement> measured = simulated_measurements(cost, options);
  for (Measurement& m : measured) m.median_s *= 1.25;  // baseline unchanged: the speedup drops by 1/1.25
  const calibrate::CompositeValidation v = calibrate::validate_composites(
      measured, [&](const std::string&) { return cost; }, options);
  for (const calibrate::CompositeRow& r : v.rows) {
    CHECK(r.time_error_pct == Approx(100 * (1 / 1.25 - 1)));
    const double predicted = r.predicted.speedup();
    CHECK(r.speedup_error_pp == Approx(100 * (predicted - predicted / 1.25)));
  }
  CHECK(v.mean_abs_time_error_pct == Approx(20));
}

TEST_CASE("simulated overlap pairs never beat their parts, async TP over copy engines and DTP beat their baselines") {
  const sim::CostModel cost = test::h100_cost();
  std::map<std::string, double> nccl_speedup, copy_engine_speedup;
  for (const Measurement& m : simulated_measurements(cost, {})) {
    const calibrate::CompositePrediction p = calibrate::predict_composite(m, cost, {});
    if (m.kind == "overlap") {
      CHECK(p.time_s >= std::max(p.gemm_alone_s, p.partner_alone_s) * (1 - 1e-12));
      CHECK(p.gemm_overlapped_s >= p.gemm_alone_s * (1 - 1e-12));
      CHECK(p.time_s <= p.baseline_s * (1 + 1e-12));
    } else if (m.kind == "async_tp" && m.transport == "nccl") {
      nccl_speedup[m.pattern] = p.speedup();
    } else {
      // Large GEMMs over NVLink without SMs taken: hiding communication must pay.
      CHECK(p.speedup() > 1.0);
      if (m.kind == "async_tp") copy_engine_speedup[m.pattern] = p.speedup();
    }
  }
  // Over NCCL's send/recv every chunk's GEMM runs on the SMs its 32 channels leave and pays the shared-SM tail:
  // less than over copy engines (PyTorch's decomposed async TP over NCCL ran slower than its baseline,
  // pytorch/pytorch#143160: 354 against 301 us).
  REQUIRE(nccl_speedup.size() == 2);
  for (const auto& [pattern, speedup] : nccl_speedup) CHECK(speedup < copy_engine_speedup.at(pattern));
}

TEST_CASE("composites the simulator does not model, or that failed their check, are skipped with the reason") {
  // An A100 has no fp8 tensor cores.
  const sim::CostModel cost(test::gpu_preset("a100-sxm"), test::profile_preset("h100-sxm"));
  Measurement fp8 = composite("overlap", "copy_kernel", 1024, 1024, 1024, 1);
  fp8.dtype = "fp8";
  fp8.bytes = 1 << 20;
  fp8.median_s = fp8.baseline_s = 1e-3;
  Measurement a2a = composite("overlap", "alltoall", 1024, 1024, 1024, 8);  // modelled: predicted, not skipped
  a2a.bytes = 1 << 20;
  a2a.median_s = a2a.baseline_s = 1e-3;
  Measurement wrong = composite("dtp", "chain", 1024, 1024, 1024, 8);
  wrong.correct = false;
  const calibrate::CompositeValidation v =
      calibrate::validate_composites({fp8, a2a, wrong}, [&](const std::string&) { return cost; }, {});
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].measured.pattern == "alltoall");
  REQUIRE(v.skipped.size() == 2);
  CHECK(v.skipped[0].second == "fp8: GPU a100-sxm has no fp8 peak (peak_fp8_tflops) in its preset");
  CHECK(v.skipped[1].second == "failed its correctness check when measured");
  CHECK_THROWS_WITH(calibrate::predict_composite(fp8, cost, {}), Catch::Contains("has no fp8 peak"));
  // On an H100 the same fp8 overlap is predicted, its GEMM faster than in bf16.
  const calibrate::CompositePrediction on_h100 = calibrate::predict_composite(fp8, test::h100_cost(), {});
  Measurement bf16 = fp8;
  bf16.dtype = "bf16";
  CHECK(on_h100.gemm_alone_s < calibrate::predict_composite(bf16, test::h100_cost(), {}).gemm_alone_s);
}

TEST_CASE("the size holdout fits on the smaller half of each single-op group, the kind holdout on all of them") {
  std::vector<Measurement> all;
  for (int64_t size : {4096, 1024, 2048, 512, 8192}) {
    Measurement g;
    g.kind = "gemm";
    g.gpu = "h100-sxm";
    g.m = g.n = g.k = size;
    all.push_back(g);
  }
  for (double bytes : {1e6, 4e6, 2e6}) {
    Measurement c;
    c.kind = "collective";
    c.gpu = "h100-sxm";
    c.collective = "allgather";
    c.ranks = 8;
    c.bytes = bytes;
    all.push_back(c);
  }
  all.push_back(composite("dtp", "chain", 64, 64, 64, 8));
  const std::vector<Measurement> small = calibrate::fit_set(all, calibrate::Holdout::kSize);
  // GEMMs: 3 of 5 (512, 1024, 2048); all-gathers: 2 of 3 (1 MB, 2 MB); composites never.
  REQUIRE(small.size() == 5);
  CHECK(small[0].bytes == 1e6);
  CHECK(small[1].bytes == 2e6);
  CHECK(small[2].m == 512);
  CHECK(small[4].m == 2048);
  CHECK(calibrate::fit_set(all, calibrate::Holdout::kKind).size() == 8);
  CHECK_THROWS_WITH(calibrate::parse_holdout("random"), "--holdout random: valid: none, kind, size");
}

TEST_CASE("GEMMs overlapped with collectives fit nccl.sms: the simulator's own slowdowns give back its SM count") {
  sim::CostProfile truth = test::profile_preset("h100-sxm");
  truth.nccl_sms = 24;
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), truth);
  std::vector<Measurement> points;
  for (const char* pattern : {"allreduce", "allgather", "reducescatter"}) {
    for (int64_t size : {4096, 8192}) {
      Measurement m = composite("overlap", pattern, size, size, size, 8);
      m.bytes = 512.0 * (1 << 20);
      m.origin = std::string(pattern) + std::to_string(size);
      const calibrate::CompositePrediction p = calibrate::predict_composite(m, cost, {});
      m.gemm_alone_s = p.gemm_alone_s;
      m.partner_alone_s = p.partner_alone_s;
      m.gemm_overlapped_s = p.gemm_overlapped_s;
      m.median_s = m.p10_s = m.p90_s = p.time_s;
      m.baseline_s = p.baseline_s;
      REQUIRE(m.gemm_overlapped_s > m.gemm_alone_s);  // the collective slows the GEMM
      points.push_back(m);
    }
  }
  const sim::CostProfile h100 = test::profile_preset("h100-sxm");
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, test::gpu_preset("h100-sxm"), &h100, "h100");
  CHECK(fit.profile.nccl_sms == 24);
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"overlap.jsonl"}));
  CHECK(yaml.find("sms_source: \"fitted on 6 GEMMs beside collectives") != std::string::npos);
}

TEST_CASE("peer copies of several sizes fit the copy engine's step latency and efficiency") {
  const double latency = 2.5e-6, efficiency = 0.85, link = 450e9;
  std::vector<Measurement> points;
  for (double mib : {1.0, 16.0, 256.0, 4096.0}) {
    Measurement m;
    m.kind = "memcpy";
    m.gpu = "h100-sxm";
    m.path = "peer";
    m.bytes = mib * (1 << 20);
    m.median_s = m.p10_s = m.p90_s = latency + m.bytes / (link * efficiency);
    m.origin = "copy" + std::to_string(static_cast<int>(mib));
    points.push_back(m);
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, test::gpu_preset("h100-sxm"));
  CHECK(fit.profile.copy_engine.step_latency_s == Approx(latency).epsilon(1e-6));
  CHECK(fit.profile.copy_engine.link_efficiency == Approx(efficiency).epsilon(1e-6));
  CHECK(
      sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"c.jsonl"})).find("peer copies of several sizes") !=
      std::string::npos);
}

TEST_CASE("launch chains fit the host time per launch and per cross-stream wait, and the GPU's per wait") {
  const auto chain = [](const std::string& pattern, int kernels, double seconds) {
    Measurement m;
    m.kind = "launch";
    m.gpu = "h100-sxm";
    m.pattern = pattern;
    m.kernels = kernels;
    m.median_s = m.p10_s = m.p90_s = seconds;
    m.origin = pattern + std::to_string(kernels);
    return m;
  };
  const std::vector<Measurement> points = {chain("same_stream", 1000, 3.2e-3), chain("same_stream", 2000, 6.4e-3),
                                           chain("cross_stream", 1000, 5.0e-3)};
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, test::gpu_preset("h100-sxm"));
  CHECK(fit.profile.host_launch_s == Approx(3.2e-6));
  CHECK(fit.profile.stream_wait_s == Approx(1.8e-6));
  CHECK(fit.profile.gpu_wait_s == 0);  // no queued chain: not measured
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"launch.jsonl"}));
  CHECK(sim::parse_profile(yaml, "p").stream_wait_s == Approx(1.8e-6));
  CHECK(yaml.find("gpu_wait_us 0 until measured") != std::string::npos);
  // Chains queued behind a busy kernel are GPU-bound: 1.9 us per empty kernel, 1.1 us more per wait.
  std::vector<Measurement> queued = points;
  queued.push_back(chain("same_stream_queued", 1000, 1.9e-3));
  queued.push_back(chain("cross_stream_queued", 1000, 3.0e-3));
  const calibrate::ProfileFit both = calibrate::fit_profile(queued, test::gpu_preset("h100-sxm"));
  CHECK(both.profile.host_launch_s == Approx(3.2e-6));
  CHECK(both.profile.gpu_wait_s == Approx(1.1e-6));
  const std::string both_yaml = sim::profile_yaml(calibrate::profile_record(both, "h100-sxm", {"launch.jsonl"}));
  CHECK(sim::parse_profile(both_yaml, "p").gpu_wait_s == Approx(1.1e-6));
  CHECK(both_yaml.find("queued behind a busy kernel") != std::string::npos);
  for (const calibrate::ComponentFit& c : both.fits) {
    if (c.name == "launch") CHECK(c.max_abs_error_pct < 1e-6);  // each pattern's mean reproduces it
  }
  // Through the schema: a launch point's fields survive a round trip.
  const Measurement back = calibrate::parse_measurement(calibrate::to_json(points[2]).dump(), "l");
  CHECK(back.pattern == "cross_stream");
  CHECK(back.kernels == 1000);
}
