// The host's time per collective call: points timed through torch.distributed split their per-call constant into
// NCCL's and the framework's, and the shipped profiles carry the H200 sweep's.
#include <catch2/catch.hpp>

#include "base/measurement.hpp"
#include "calibrate/fits/component_fits.hpp"
#include "calibrate/fits/ring_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "fit_support.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

TEST_CASE(
    "all-reduces timed through torch.distributed split their per-call constant into NCCL's and the framework's host "
    "time") {
  const sim::GpuSpec gpu = test::gpu_preset("h200-sxm");
  const sim::CostProfile base = test::profile_preset("h100-sxm");
  REQUIRE(base.nccl_small);
  const double nccl_s = base.nccl_call_latency_s, host_s = 30e-6;
  calibrate::RingRegimes regimes = test::both_regimes_of(base);
  regimes.call_latency_s = nccl_s;
  std::vector<calibrate::Measurement> points;
  for (double bytes : {32768.0, 131072.0, 524288.0, 1048576.0}) {
    calibrate::Measurement m;
    m.kind = "collective";
    m.gpu = gpu.name;
    m.collective = "allreduce";
    m.algorithm = "ring";
    m.timed_as = calibrate::kTimedAsTorch;
    m.ranks = 8;
    m.bytes = bytes;
    // On the GPU: NCCL's call latency and the ring; before it, on the host: the launch and torch's work per call.
    m.median_s =
        base.host_launch_s + host_s + calibrate::ring_regimes_seconds(regimes, {8, bytes, 0, 14}, gpu.nvlink_Bps);
    m.origin = "m.jsonl:" + std::to_string(points.size() + 1);
    points.push_back(m);
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &base, "base.yaml");
  CHECK(fit.profile.nccl_call_latency_s == nccl_s);  // the base's NCCL part stays
  CHECK(fit.profile.collective_host_s == Approx(host_s).epsilon(1e-9));
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, gpu.name, {"m.jsonl"}));
  const sim::CostProfile read = sim::parse_profile(yaml, "p.yaml");
  CHECK(read.collective_host_s == Approx(host_s).epsilon(1e-6));
  CHECK(read.sources.at("launch.collective_host_us").fitted);
  CHECK_FALSE(read.sources.at("nccl.call_latency_us").fitted);
  // The same times taken as the device's (a graph, or nccl-tests' loop) fit NCCL's device time per call, the host's
  // time per call staying the base's.
  for (const char* timing : {calibrate::kTimedAsGraph, calibrate::kTimedAsNcclTests}) {
    std::vector<calibrate::Measurement> device = points;
    for (calibrate::Measurement& m : device) m.timed_as = timing;
    const calibrate::ProfileFit own = calibrate::fit_profile(device, gpu, &base, "base.yaml");
    CHECK(own.profile.nccl_call_latency_s == Approx(nccl_s + base.host_launch_s + host_s).epsilon(1e-9));
    CHECK(own.profile.collective_host_s == base.collective_host_s);
  }
  // A fit of one constant on points timed both ways could not split it.
  std::vector<calibrate::Measurement> mixed = points;
  for (size_t i = 1; i < mixed.size(); ++i) mixed[i].timed_as = calibrate::kTimedAsGraph;
  CHECK_THROWS_WITH(calibrate::fit_profile(mixed, gpu, &base, "base.yaml"),
                    Contains("through torch.distributed (m.jsonl:1)") && Contains("(graph, m.jsonl:2)"));
}

TEST_CASE("torch.distributed's host time per call that profiles without torch-timed points carry is the H200 sweep's") {
  // As tools/refit_profiles.sh fits the h200 profile: its torch-timed sweep and NVLS rows over the h100 profile,
  // whose device time per call stays; the rest of each call's constant, after launch.host_us, is torch's host work.
  std::vector<calibrate::Measurement> points =
      calibrate::read_measurements(test::kMeasurements + "allreduce_h200_busbw.jsonl");
  const auto nvls = calibrate::read_measurements(test::kMeasurements + "nvls_vs_ring_h200.jsonl");
  points.insert(points.end(), nvls.begin(), nvls.end());
  const sim::CostProfile base = test::profile_preset("h100-sxm");
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, test::gpu_preset("h200-sxm"), &base, "h100-sxm");
  REQUIRE(fit.call_latency_split);
  CHECK(fit.profile.nccl_call_latency_s == base.nccl_call_latency_s);
  // The constant is written with 6 significant digits.
  CHECK(fit.profile.collective_host_s * 1e6 == Approx(calibrate::kTorchCollectiveHostUs).epsilon(1e-5));
  CHECK(base.collective_host_s * 1e6 == Approx(calibrate::kTorchCollectiveHostUs).epsilon(1e-9));
}
