// The NCCL ring fits recover step latency, link efficiency, call latency and each protocol's regime from exact ring
// times, and refuse points that cannot fit them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "base/measurement.hpp"
#include "base/units.hpp"
#include "calibrate/fits/ring_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "fit_support.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// Two ring regimes (low-latency, Simple) and a call latency, as exact all-gather times on 8 ranks
// from 256 KiB to 1 GiB by doubling.
std::vector<calibrate::RingSample> two_regime_gathers(sim::TransportParams small, sim::TransportParams simple,
                                                      double call_latency_s, double link) {
  calibrate::RingRegimes truth;
  truth.has_small = true;
  truth.small = small;
  truth.simple = simple;
  truth.call_latency_s = call_latency_s;
  std::vector<calibrate::RingSample> samples;
  for (double mib = 0.25; mib <= 1024; mib *= 2) {
    calibrate::RingSample s{8, mib * 1024 * 1024, 0};
    s.seconds = calibrate::ring_regimes_seconds(truth, s, link);
    samples.push_back(s);
  }
  return samples;
}

}  // namespace

TEST_CASE("the ring fit recovers step latency and link efficiency from exact ring times") {
  const double link = 450e9, latency = 6e-6, efficiency = 0.7;
  std::vector<calibrate::RingSample> samples;
  for (double mib : {1.0, 4.0, 32.0, 256.0}) {
    const double bytes = mib * 1024 * 1024;
    samples.push_back({8, bytes, 7 * (latency + bytes / (8 * link * efficiency))});
  }
  const calibrate::RingFit fit = calibrate::fit_ring(samples, link);
  CHECK(fit.params.step_latency_s == Approx(latency).epsilon(1e-9));
  CHECK(fit.params.link_efficiency == Approx(efficiency).epsilon(1e-9));
  CHECK(fit.max_abs_error_pct < 1e-6);
}

TEST_CASE("a ring fit whose line would cross zero above zero bytes takes no latency rather than a negative one") {
  const double link = 450e9, efficiency = 0.7;
  std::vector<calibrate::RingSample> samples;
  for (double mib : {4.0, 32.0, 256.0}) {
    const double bytes = mib * 1024 * 1024;
    samples.push_back({8, bytes, 7 * bytes / (8 * link * efficiency) - 0.1e-6});  // intercept -0.1 us
  }
  const calibrate::RingFit fit = calibrate::fit_ring(samples, link);
  CHECK(fit.params.step_latency_s == 0);
  CHECK(fit.params.link_efficiency == Approx(efficiency).epsilon(0.02));
}

TEST_CASE("the two-regime ring fit recovers a low-latency and a Simple regime from exact times") {
  const double link = 450e9;
  const std::vector<calibrate::RingSample> samples = two_regime_gathers({2e-6, 0.3}, {6e-6, 0.75}, 0, link);
  const calibrate::RingRegimes fit = calibrate::fit_ring_regimes(samples, link);
  REQUIRE(fit.has_small);
  CHECK(fit.small.step_latency_s == Approx(2e-6).epsilon(1e-6));
  CHECK(fit.small.link_efficiency == Approx(0.3).epsilon(1e-6));
  CHECK(fit.simple.step_latency_s == Approx(6e-6).epsilon(1e-6));
  CHECK(fit.simple.link_efficiency == Approx(0.75).epsilon(1e-6));
  // One regime's times need no second one.
  std::vector<calibrate::RingSample> plain = samples;
  for (auto& s : plain) s.seconds = 7 * (6e-6 + s.tensor_bytes / (8 * link * 0.75));
  CHECK_FALSE(calibrate::fit_ring_regimes(plain, link).has_small);
}

TEST_CASE(
    "all-reduces beside all-gathers tell NCCL's call latency from the per-step latency, and one step count cannot") {
  const double link = 450e9;
  calibrate::RingRegimes truth;
  truth.has_small = true;
  truth.small = {1e-6, 0.3};
  truth.simple = {3e-6, 0.75};
  truth.call_latency_s = 20e-6;
  const std::vector<calibrate::RingSample> gathers = two_regime_gathers(truth.small, truth.simple, 20e-6, link);
  std::vector<calibrate::RingSample> with_reduces = gathers;
  for (double mib : {0.25, 0.5, 1.0}) {
    calibrate::RingSample s{8, mib * 1024 * 1024, 0, 14};  // an all-reduce ring: 2 (n - 1) steps
    s.seconds = calibrate::ring_regimes_seconds(truth, s, link);
    with_reduces.push_back(s);
  }
  const calibrate::RingRegimes fit = calibrate::fit_ring_regimes(with_reduces, link);
  REQUIRE(fit.has_small);
  CHECK(fit.call_latency_fitted);
  CHECK(fit.call_latency_s == Approx(20e-6).epsilon(1e-6));
  CHECK(fit.small.step_latency_s == Approx(1e-6).epsilon(1e-6));
  CHECK(fit.small.link_efficiency == Approx(0.3).epsilon(1e-6));
  CHECK(fit.simple.step_latency_s == Approx(3e-6).epsilon(1e-6));
  CHECK(fit.simple.link_efficiency == Approx(0.75).epsilon(1e-6));
  // All-gathers alone (7 steps each) keep the given call latency; the per-step latencies absorb the
  // rest (c / 7 each), which fits them as exactly.
  const calibrate::RingRegimes kept = calibrate::fit_ring_regimes(gathers, link, 6e-6);
  CHECK_FALSE(kept.call_latency_fitted);
  CHECK(kept.call_latency_s == 6e-6);
  CHECK(kept.small.step_latency_s == Approx(1e-6 + 14e-6 / 7).epsilon(1e-6));
  CHECK(kept.max_abs_error_pct < 1e-6);
}

TEST_CASE("all-gathers at two rank counts fit one ring line across them, and their step counts tell the call latency") {
  const double link = 450e9, call = 12e-6, latency = 2e-6, efficiency = 0.75;
  std::vector<calibrate::RingSample> samples;
  for (int n : {4, 8}) {
    for (double mib : {8.0, 64.0, 512.0}) {
      const double bytes = mib * 1024 * 1024;
      samples.push_back({n, bytes, call + (n - 1) * (latency + bytes / (n * link * efficiency))});
    }
  }
  const calibrate::RingRegimes fit = calibrate::fit_ring_regimes(samples, link);
  CHECK_FALSE(fit.has_small);
  CHECK(fit.call_latency_fitted);
  CHECK(fit.call_latency_s == Approx(call).epsilon(1e-6));
  CHECK(fit.simple.step_latency_s == Approx(latency).epsilon(1e-6));
  CHECK(fit.simple.link_efficiency == Approx(efficiency).epsilon(1e-6));
}

TEST_CASE("ring all-reduces without all-gathers fit the call latency alone over the base, where latency shows") {
  const sim::GpuSpec gpu = test::gpu_preset("h200-sxm");
  const sim::CostProfile base = test::profile_preset("h100-sxm");
  REQUIRE(base.nccl_small);
  const double call = 37e-6;
  calibrate::RingRegimes regimes = test::both_regimes_of(base);
  regimes.call_latency_s = call;
  std::vector<calibrate::Measurement> points;
  for (double bytes : {32768.0, 131072.0, 524288.0, 1048576.0, 8589934592.0}) {
    calibrate::Measurement m;
    m.kind = "collective";
    m.gpu = gpu.name;
    m.collective = "allreduce";
    m.algorithm = "ring";
    m.ranks = 8;
    m.bytes = bytes;
    m.median_s = calibrate::ring_regimes_seconds(regimes, {8, bytes, 0, 14}, gpu.nvlink_Bps);
    if (bytes > 1e9) m.median_s *= 1.1;  // a Simple-regime point off by 10%: it must not move the call latency
    m.origin = "m.jsonl:" + std::to_string(points.size() + 1);
    points.push_back(m);
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &base, "base.yaml");
  CHECK(fit.profile.nccl_call_latency_s == Approx(call).epsilon(1e-9));
  CHECK(fit.profile.nccl.step_latency_s == base.nccl.step_latency_s);  // the base's per-step costs stay
  const auto c = std::find_if(fit.fits.begin(), fit.fits.end(),
                              [](const calibrate::ComponentFit& f) { return f.name == "nccl_call_latency"; });
  REQUIRE(c != fit.fits.end());
  CHECK(c->errors.size() == 4);  // the 8 GiB all-reduce runs Simple: latency does not show there
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, gpu.name, {"m.jsonl"}));
  CHECK(yaml.find("  call_latency_us: 37\n  call_latency_source: \"fitted alone") != std::string::npos);
  CHECK(sim::parse_profile(yaml, "p.yaml").nccl_call_latency_s == Approx(call).epsilon(1e-6));
}

TEST_CASE("ring points that name their NCCL protocol fit that regime, written back as nccl.ll and nccl.ll128") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const double link = gpu.nvlink_Bps;
  struct Regime {
    const char* protocol;
    double latency_s, efficiency;
  };
  const Regime regimes[] = {{"simple", 7e-6, 0.78}, {"ll", 1.5e-6, 0.3}, {"ll128", 3.5e-6, 0.7}};
  // Every call pays 5 us first; the LL points on 4 and 8 ranks (3 and 7 steps) tell it from the steps.
  const double call_s = 5e-6;
  std::vector<calibrate::Measurement> points;
  int row = 0;
  for (const Regime& r : regimes) {
    for (const int ranks : {8, 4}) {
      if (ranks == 4 && std::string(r.protocol) != "ll") continue;
      for (double bytes : {65536.0, 1048576.0, 16777216.0, 268435456.0}) {
        const double t = call_s + (ranks - 1) * (r.latency_s + bytes / (ranks * link * r.efficiency));
        const std::string text = std::string(R"({"kind":"collective","gpu":"h100-sxm","collective":"allgather",)") +
                                 R"("algorithm":"ring","protocol":")" + r.protocol + R"(","ranks":)" +
                                 std::to_string(ranks) + R"(,"bytes":)" + model::format_number("%.0f", bytes) +
                                 R"(,"median_s":)" + model::format_number("%.12g", t) + "}";
        points.push_back(calibrate::parse_measurement(text, "p.jsonl:" + std::to_string(++row)));
      }
    }
  }
  CHECK(points.front().protocol == "simple");
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu);
  CHECK(fit.profile.nccl_call_latency_s == Approx(call_s).epsilon(1e-6));
  CHECK(fit.profile.nccl.step_latency_s == Approx(7e-6).epsilon(1e-6));
  CHECK(fit.profile.nccl.link_efficiency == Approx(0.78).epsilon(1e-6));
  REQUIRE(fit.profile.nccl_ll);
  REQUIRE(fit.profile.nccl_ll128);
  CHECK_FALSE(fit.profile.nccl_small);  // no point of unknown protocol
  CHECK(fit.profile.nccl_ll->step_latency_s == Approx(1.5e-6).epsilon(1e-6));
  CHECK(fit.profile.nccl_ll->link_efficiency == Approx(0.3).epsilon(1e-6));
  CHECK(fit.profile.nccl_ll128->step_latency_s == Approx(3.5e-6).epsilon(1e-6));
  CHECK(fit.profile.nccl_ll128->link_efficiency == Approx(0.7).epsilon(1e-6));
  CHECK(std::find(fit.not_fitted.begin(), fit.not_fitted.end(), "nccl") == fit.not_fitted.end());
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"p.jsonl"}));
  CHECK_THAT(yaml, Contains("run with NCCL_PROTO=Simple") && Contains("  ll:\n    step_latency_us: 1.5\n") &&
                       Contains("  ll128:\n    step_latency_us: 3.5\n") && Contains("NCCL_PROTO=LL128"));
  const sim::CostProfile back = sim::parse_profile(yaml, "p.yaml");
  REQUIRE(back.nccl_ll128);
  CHECK(back.nccl_ll128->link_efficiency == Approx(0.7).epsilon(1e-5));
  CHECK(back.nccl_ll->step_latency_s == Approx(1.5e-6).epsilon(1e-5));
  // Simulated with the protocol each point names, the fitted profile gives back every time.
  const sim::CostModel cost(gpu, fit.profile);
  for (const calibrate::Measurement& m : points) {
    INFO(m.origin);
    const double t = test::simulate_collective(cost, m.ranks, model::CollectiveKind::kAllGather, m.bytes,
                                               model::CollectiveAlgorithm::kRing, *model::protocol_named(m.protocol));
    CHECK(t == Approx(m.median_s).epsilon(1e-5));
  }
}

TEST_CASE("ring times that do not grow with the message size are refused, naming the points") {
  std::vector<calibrate::Measurement> points;
  for (const auto& [bytes, seconds] : {std::pair{1e6, 5e-5}, std::pair{8e6, 4e-5}}) {
    points.push_back(calibrate::parse_measurement(
        R"({"kind":"collective","gpu":"h100-sxm","collective":"allgather","algorithm":"ring","ranks":8,"bytes":)" +
            model::format_number("%.0f", bytes) + R"(,"median_s":)" + model::format_number("%.9g", seconds) + "}",
        "m.jsonl:" + std::to_string(points.size() + 1)));
  }
  CHECK_THROWS_WITH(calibrate::fit_profile(points, test::gpu_preset("h100-sxm")),
                    Contains("m.jsonl:1, m.jsonl:2: the nccl fit") && Contains("grow with the message size"));
}

TEST_CASE("points of another GPU fit nothing but the network section, and one message size fits no latency") {
  const auto line = [](const std::string& gpu, double bytes, double seconds) {
    return R"({"kind":"collective","gpu":")" + gpu +
           R"(","collective":"allgather","algorithm":"ring","ranks":8,"bytes":)" + model::format_number("%.0f", bytes) +
           R"(,"median_s":)" + model::format_number("%.9g", seconds) + "}";
  };
  std::vector<calibrate::Measurement> points;
  for (double bytes : {1e6, 1e8})
    points.push_back(calibrate::parse_measurement(line("b200", bytes, 1e-4 + bytes / 4e11), "b"));
  const sim::CostProfile h100 = test::profile_preset("h100-sxm");
  CHECK_THROWS_WITH(calibrate::fit_profile(points, test::gpu_preset("h100-sxm"), &h100, "h100"),
                    Contains("calibrate nothing") && Contains("of h100-sxm (2 points of other GPUs)"));
  // Beside a peer copy, the same points leave the ring as it was.
  points.push_back(calibrate::parse_measurement(
      R"({"kind":"memcpy","gpu":"h100-sxm","path":"peer","bytes":1e9,"spec_GBps":450,"median_s":0.003})", "c"));
  const calibrate::ProfileFit other = calibrate::fit_profile(points, test::gpu_preset("h100-sxm"), &h100, "h100");
  CHECK(other.other_gpu_points == 2);
  CHECK(other.profile.nccl.step_latency_s == h100.nccl.step_latency_s);
  std::vector<calibrate::Measurement> one_size = {points.back()};
  for (int i = 0; i < 3; ++i) one_size.push_back(calibrate::parse_measurement(line("h100-sxm", 1e8, 3e-4), "h"));
  const calibrate::ProfileFit flat = calibrate::fit_profile(one_size, test::gpu_preset("h100-sxm"), &h100, "h100");
  CHECK(flat.profile.nccl.link_efficiency == h100.nccl.link_efficiency);
  CHECK(std::find(flat.not_fitted.begin(), flat.not_fitted.end(), "nccl") != flat.not_fitted.end());
}
