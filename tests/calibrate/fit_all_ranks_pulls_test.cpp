// The copy engine's rate while every rank of a group pulls at once (copy_engine.all_ranks_link_efficiency): fitted
// from such pulls, refused above the link's rate, carried marked assumed, and the value shipped profiles carry.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/profile/profile_transfer.hpp"
#include "calibrate/validation/public_report.hpp"
#include "fit_support.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A pull of `bytes` while `ranks` GPUs pull at once, timed as the copy engine's closed form gives it at `efficiency`
// of the H100's 450 GB/s after `latency_s`.
calibrate::Measurement pull(double bytes, double efficiency, double latency_s, const std::string& origin) {
  calibrate::Measurement m;
  m.kind = "memcpy";
  m.gpu = "h100-sxm";
  m.path = "peer_all_ranks";
  m.ranks = 8;
  m.bytes = bytes;
  m.median_s = m.p10_s = m.p90_s = latency_s + bytes / (efficiency * 450e9);
  m.origin = origin;
  return m;
}

}  // namespace

TEST_CASE("the copy engine's rate while every rank pulls is fitted from such pulls, after the copy step's latency") {
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  // The latency a profile fitted without peer copies of several sizes assumes (3 us, as the shipped ones say).
  const double latency = test::profile_preset("h100-sxm").copy_engine.step_latency_s;
  const std::vector<calibrate::Measurement> pulls = {pull(64.0 * (1 << 20), 0.5, latency, "p.jsonl:1"),
                                                     pull(256.0 * (1 << 20), 0.5, latency, "p.jsonl:2")};
  const calibrate::ProfileFit fit = calibrate::fit_profile(pulls, h100);
  REQUIRE(fit.profile.copy_engine_all_ranks_efficiency);
  CHECK(*fit.profile.copy_engine_all_ranks_efficiency == Approx(0.5).epsilon(1e-12));
  CHECK_THAT(fit.all_ranks_source, StartsWith("fitted on 2 pulls") && Contains("p.jsonl:1, p.jsonl:2"));
  // The one-pair rate is another section's: no peer copy, so it is not fitted here.
  CHECK(std::find(fit.not_fitted.begin(), fit.not_fitted.end(), "copy_engine") != fit.not_fitted.end());
  const auto c = std::find_if(fit.fits.begin(), fit.fits.end(),
                              [](const calibrate::ComponentFit& f) { return f.name == "copy_engine_all_ranks"; });
  REQUIRE(c != fit.fits.end());
  CHECK(c->max_abs_error_pct < 1e-9);  // the points lie on the closed form
  // The validation report predicts each pull at the fitted rate, as an exchange's pulls run.
  CHECK(calibrate::predicted_seconds(pulls[1], h100, fit.profile) == Approx(pulls[1].median_s).epsilon(1e-12));
}

TEST_CASE("a pull faster than its link is refused and the profile keeps the value it would have had") {
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  calibrate::Measurement peer = pull(1 << 30, 0.8, 3e-6, "p.jsonl:1");
  peer.path = "peer";
  const calibrate::Measurement too_fast = pull(1 << 30, 1.2, 3e-6, "p.jsonl:2");
  const calibrate::ProfileFit fit = calibrate::fit_profile({peer, too_fast}, h100);
  REQUIRE(fit.refused.size() == 1);
  CHECK_THAT(fit.refused.front(), Contains("all_ranks_link_efficiency 1.2") && Contains("above the link's rate"));
  const calibrate::ProfileFit without = calibrate::fit_profile({peer}, h100);
  CHECK(fit.profile.copy_engine_all_ranks_efficiency == without.profile.copy_engine_all_ranks_efficiency);
  // Nothing else to fit: the refusal is the error.
  CHECK_THROWS_WITH(calibrate::fit_profile({too_fast}, h100), Contains("above the link's rate"));
}

TEST_CASE(
    "profiles without pulls of their own carry the h100-sxm fit of the published trace's pull, assumed elsewhere") {
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  const auto trace = calibrate::read_measurements(test::kMeasurements + "async_tp_trace_pulls.jsonl");
  REQUIRE(trace.size() == 1);
  // The trace's pull: one shard of batch 16 x 8192 tokens / 8 ranks x 8192 hidden in bf16 in 0.99 ms, all 8 pulling.
  CHECK(trace[0].bytes == 16.0 * 8192 / 8 * 8192 * 2);
  CHECK(trace[0].ranks == 8);
  const calibrate::ProfileFit fitted = calibrate::fit_profile(trace, h100);
  const double expected = trace[0].bytes / ((0.99e-3 - 3e-6) * 450e9);  // less the assumed 3 us, over 450 GB/s
  CHECK(*fitted.profile.copy_engine_all_ranks_efficiency == Approx(expected).epsilon(1e-12));
  // A fit without such pulls carries that value (written with 5 significant digits).
  const auto peers = calibrate::read_measurements(test::kMeasurements + "p2p_bandwidth.jsonl");
  const calibrate::ProfileFit carried = calibrate::fit_profile(peers, h100);
  CHECK(*carried.profile.copy_engine_all_ranks_efficiency == Approx(expected).epsilon(1e-5));
  CHECK_THAT(carried.all_ranks_source, StartsWith("not fitted here: the h100-sxm fit"));
  // Carried to another GPU, the fitted value is marked assumed there, with how it was fitted.
  calibrate::ProfileFit a100 = fitted;
  calibrate::transfer_profile(a100, h100, test::gpu_preset("a100-sxm"));
  CHECK_THAT(a100.all_ranks_source,
             StartsWith("assumed: the h100-sxm value, carried to a100-sxm") && Contains("fitted on 1 pull"));
  CHECK_THAT(calibrate::copy_engine_all_ranks_source("h20"), StartsWith("assumed: the h100-sxm value, carried to h20"));
}

TEST_CASE("a pull while every rank pulls names its ranks, and is read back as written") {
  const std::string line =
      R"({"kind":"memcpy","gpu":"h100-sxm","path":"peer_all_ranks","bytes":1048576,"median_s":1e-5})";
  CHECK_THROWS_WITH(calibrate::parse_measurement(line, "m.jsonl:4"), Contains("m.jsonl:4") && Contains("ranks"));
  const calibrate::Measurement one = pull(1 << 20, 0.6, 3e-6, "m.jsonl:1");
  const calibrate::Measurement back = calibrate::parse_measurement(calibrate::to_json(one).dump(), "m.jsonl:1");
  CHECK(back.path == "peer_all_ranks");
  CHECK(back.ranks == 8);
  CHECK(back.median_s == one.median_s);
}
