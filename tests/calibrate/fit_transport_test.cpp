// The optional transports' fits: the network ring across nodes, NCCL's tree, the two-shot all-reduce, and DeepEP's
// rates from its published bandwidths.
#include <catch2/catch.hpp>

#include "base/measurement.hpp"
#include "base/units.hpp"
#include "calibrate/fits/component_fits.hpp"
#include "calibrate/fits/ring_fit.hpp"
#include "calibrate/fits/tree_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/sources/csv_table.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"
#include "test_support.hpp"

using namespace tpsim;

TEST_CASE("the network fit recovers a multi-node ring all-reduce's step latency and NIC efficiency") {
  const double nics = 8 * 50e9, latency = 6e-6, efficiency = 0.9;
  std::vector<calibrate::RingSample> samples;
  for (double mib : {1.0, 16.0, 256.0, 4096.0}) {
    const double bytes = mib * 1024 * 1024, n = 32;
    samples.push_back({32, bytes, 2 * (n - 1) * (latency + bytes / (n * nics * efficiency))});
  }
  const calibrate::RingFit fit = calibrate::fit_network_ring(samples, nics);
  CHECK(fit.params.step_latency_s == Approx(latency).epsilon(1e-9));
  CHECK(fit.params.link_efficiency == Approx(efficiency).epsilon(1e-9));
}

TEST_CASE("multi-node points fit only the network section, one system at a time, and the profile says so") {
  const std::string line =
      R"({"kind":"collective","gpu":"b200","collective":"allreduce","ranks":16,"nodes":2,"nic_GBps":25,"bytes":B,"median_s":T})";
  const double latency = 10e-6, efficiency = 0.8, n = 16, nics = 8 * 25e9;
  std::vector<calibrate::Measurement> points;
  int row = 0;
  for (double bytes : {1e6, 1e7, 1e8, 1e9}) {
    std::string text = line;
    text.replace(text.find("B,"), 1, model::format_number("%.0f", bytes));
    const double t = 2 * (n - 1) * (latency + bytes / (n * nics * efficiency));
    text.replace(text.find("T}"), 1, model::format_number("%.12g", t));
    points.push_back(calibrate::parse_measurement(text, "m.jsonl:" + std::to_string(++row)));
  }
  CHECK(points.front().nodes == 2);
  CHECK(points.front().nic_GBps == 25);
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, test::gpu_preset("b200"));
  REQUIRE(fit.profile.network);
  CHECK(fit.profile.network->step_latency_s == Approx(latency).epsilon(1e-6));
  CHECK(fit.profile.network->link_efficiency == Approx(efficiency).epsilon(1e-6));
  REQUIRE(fit.fits.size() == 1);
  CHECK(fit.fits.front().name == "network");
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "b200", {"m.jsonl"}));
  CHECK(yaml.find("network:\n  step_latency_us: 10\n") != std::string::npos);
  CHECK(sim::parse_profile(yaml, "p.yaml").network->link_efficiency == Approx(efficiency).epsilon(1e-5));
}

TEST_CASE("the tree fit recovers NCCL tree latency and efficiency from the plan's own times, across systems") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostProfile base = test::profile_preset("h100-sxm");
  const sim::TransportParams truth{7e-6, 0.8};
  std::vector<calibrate::Measurement> points;
  int line = 0;
  for (int nodes : {2, 4}) {
    for (double bytes : {65536.0, 1048576.0, 67108864.0, 1073741824.0}) {
      const calibrate::TreeSample sample{nodes * 8, nodes, 0, bytes, 0};
      const double t = calibrate::tree_seconds(truth, sample, gpu, base);
      points.push_back(calibrate::parse_measurement(
          R"({"kind":"collective","gpu":"h100-sxm","collective":"allreduce","algorithm":"tree","ranks":)" +
              std::to_string(nodes * 8) + R"(,"nodes":)" + std::to_string(nodes) + R"(,"bytes":)" +
              model::format_number("%.0f", bytes) + R"(,"median_s":)" + model::format_number("%.12g", t) + "}",
          "tree.jsonl:" + std::to_string(++line)));
    }
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &base, "h100");
  REQUIRE(fit.profile.tree);
  CHECK(fit.profile.tree->step_latency_s == Approx(truth.step_latency_s).epsilon(1e-6));
  CHECK(fit.profile.tree->link_efficiency == Approx(truth.link_efficiency).epsilon(1e-6));
  REQUIRE(fit.fits.size() == 1);
  CHECK(fit.fits.front().name == "tree");
  CHECK(fit.fits.front().max_abs_error_pct < 1e-6);
  const sim::CostProfile round_trip =
      sim::parse_profile(sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"tree.jsonl"})), "p");
  REQUIRE(round_trip.tree);
  CHECK(round_trip.tree->link_efficiency == Approx(0.8).epsilon(1e-5));
}

TEST_CASE("the two-shot fit recovers step latency and link efficiency from exact two-shot times") {
  const double link = 450e9, latency = 7e-6, efficiency = 0.65;
  std::vector<calibrate::RingSample> samples;
  for (int n : {4, 6, 8}) {
    for (double bytes : {0.5e6, 2e6, 4e6}) {
      samples.push_back({n, bytes, 2 * (latency + (n - 1) * (bytes / n) / (link * efficiency))});
    }
  }
  const calibrate::RingFit fit = calibrate::fit_two_shot(samples, link);
  CHECK(fit.params.step_latency_s == Approx(latency).epsilon(1e-6));
  CHECK(fit.params.link_efficiency == Approx(efficiency).epsilon(1e-6));
  CHECK(fit.max_abs_error_pct < 1e-6);
}

TEST_CASE("DeepEP's rates are its published H800 bandwidths over the NVLink port and the NIC") {
  const calibrate::CsvTable table =
      calibrate::CsvTable::read_file(std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/public/deepep_h800.csv");
  REQUIRE(table.rows() == 4);
  const double port_GBps = test::gpu_preset("h800-sxm").nvlink_Bps / 1e9;
  REQUIRE(table.at(0, "type") == "intranode");
  const double nvlink = (table.number(0, "dispatch_GBps") + table.number(0, "combine_GBps")) / 2 / port_GBps;
  CHECK(calibrate::kDeepEpNvlinkEfficiency == Approx(nvlink).margin(5e-5));  // 4 digits, as the constant keeps
  // EP 32 and 64 (rows 2, 3): the network-bound rows over a 400 Gb/s NIC; EP 16 is NVLink-bound on H800.
  double rdma = 0;
  for (size_t row = 2; row < 4; ++row) {
    rdma += (table.number(row, "dispatch_GBps") + table.number(row, "combine_GBps")) / 4 / 50.0;
  }
  CHECK(calibrate::kDeepEpRdmaEfficiency == Approx(rdma).margin(5e-5));
  const sim::CostProfile shipped = test::profile_preset("h100-sxm");
  REQUIRE(shipped.deepep);
  CHECK(shipped.deepep->nvlink_efficiency == calibrate::kDeepEpNvlinkEfficiency);
  CHECK(shipped.deepep->rdma_efficiency == calibrate::kDeepEpRdmaEfficiency);
}

namespace {

// The least-squares line y = intercept + slope x.
struct Line {
  double intercept = 0, slope = 0;
};
Line least_squares(const std::vector<double>& x, const std::vector<double>& y) {
  const auto n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return Line{my - sxy / sxx * mx, sxy / sxx};
}

}  // namespace

TEST_CASE("DeepEP's low-latency rates are the least-squares lines of the published H100 sweep of its kernels") {
  const calibrate::CsvTable table =
      calibrate::CsvTable::read_file(std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/public/deepep_ll_h100.csv");
  REQUIRE(table.rows() == 56);
  const double port_Bps = test::gpu_preset("h100-sxm").nvlink_Bps, nic_Bps = 50e9;  // CX7 400 Gb/s
  // Time (us) against the bytes the benchmark counts (GB/s x us x 1e3), 8 to 256 tokens per GPU; across nodes the
  // bytes from other nodes (1 - 8 / ep of them), dispatch and combine together.
  std::vector<double> remote_bytes, remote_us;
  for (const std::string kind : {"dispatch", "combine"}) {
    std::vector<double> bytes, us;
    for (size_t row = 0; row < table.rows(); ++row) {
      const double tokens = table.number(row, "tokens"), ep = table.number(row, "ep");
      if (tokens < 8 || tokens > 256) continue;
      const double t = table.number(row, kind + "_us"), counted = table.number(row, kind + "_GBps") * t * 1e3;
      if (ep == 8) {
        bytes.push_back(counted);
        us.push_back(t);
      } else {
        remote_bytes.push_back(counted * (1 - 8 / ep));
        remote_us.push_back(t);
      }
    }
    const Line nvlink = least_squares(bytes, us);
    const double efficiency = 1e6 / (nvlink.slope * port_Bps);
    INFO(kind);
    if (kind == "dispatch") {
      CHECK(calibrate::kDeepEpLowLatencyDispatchNvlinkEfficiency == Approx(efficiency).margin(5e-5));
      CHECK(calibrate::kDeepEpLowLatencyDispatchNvlinkLatencyUs == Approx(nvlink.intercept).margin(5e-3));
    } else {
      CHECK(calibrate::kDeepEpLowLatencyCombineNvlinkEfficiency == Approx(efficiency).margin(5e-5));
      CHECK(calibrate::kDeepEpLowLatencyCombineNvlinkLatencyUs == Approx(nvlink.intercept).margin(5e-3));
    }
  }
  const Line rdma = least_squares(remote_bytes, remote_us);
  CHECK(calibrate::kDeepEpLowLatencyRdmaEfficiency == Approx(1e6 / (rdma.slope * nic_Bps)).margin(5e-5));
  CHECK(calibrate::kDeepEpLowLatencyRdmaLatencyUs == Approx(rdma.intercept).margin(5e-3));
  const sim::CostProfile shipped = test::profile_preset("h200-sxm");
  REQUIRE(shipped.deepep);
  REQUIRE(shipped.deepep->low_latency);
  CHECK(shipped.deepep->low_latency->rdma_latency_s == Approx(calibrate::kDeepEpLowLatencyRdmaLatencyUs * 1e-6));
  CHECK(shipped.deepep->low_latency->combine_nvlink_efficiency == calibrate::kDeepEpLowLatencyCombineNvlinkEfficiency);
}
