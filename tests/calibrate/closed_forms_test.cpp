// Each collective's closed form (sim/cost/collective_time.hpp) is the idle time of the plan the engine runs,
// for random sizes and rank counts, and the fitters predict with it: a fit's error at every point is,
// bit for bit, the error of the plan its fitted profile runs, and the validation report predicts the
// same point as that plan (simulated) or, for a copy, bit for bit as the fit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>

#include "calibrate/fits/ring_fit.hpp"
#include "calibrate/fits/tree_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/validation/public_report.hpp"
#include "sim/cost/collective_time.hpp"
#include "sim/cost/fabric.hpp"
#include "sim/engine/comm_plan.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;
using model::CollectiveKind;

namespace {

struct Draw {
  int ranks = 0;
  double bytes = 0;
};

// `count` draws with a fixed seed: ranks uniform in [min_ranks, max_ranks] (in steps of `ranks_step`),
// whole bytes log-uniform from 1 KiB to 4 GiB.
std::vector<Draw> random_draws(int count, int min_ranks = 2, int max_ranks = 8, int ranks_step = 1) {
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> ranks(min_ranks / ranks_step, max_ranks / ranks_step);
  std::uniform_real_distribution<double> log2_bytes(10, 32);
  std::vector<Draw> out;
  for (int i = 0; i < count; ++i) {
    const int n = ranks(rng) * ranks_step;
    out.push_back({n, std::round(std::exp2(log2_bytes(rng)))});
  }
  return out;
}

// The idle-fabric time of the plan the engine runs for a collective, its algorithm and protocol forced.
double plan_seconds(const sim::CostModel& cost, CollectiveKind kind, double bytes, int ranks,
                    CollectiveAlgorithm algorithm, model::Protocol protocol = model::Protocol::kAuto) {
  model::Op op = test::collective_op(kind, bytes, algorithm);
  op.protocol = protocol;
  return sim::idle_seconds(sim::plan_communication(op, ranks, cost), cost);
}

// One copy-engine step of `bytes` to the next rank, as async TP and copy measurements run it.
// The H100 profile with one copy-engine rate (the one-pair fit checks single copies).
sim::CostProfile one_pair_profile() {
  sim::CostProfile p = test::profile_preset("h100-sxm");
  p.copy_engine_all_ranks_efficiency.reset();
  return p;
}

double copy_plan_seconds(const sim::CostModel& cost, double bytes) {
  model::Op op;
  op.kind = model::OpKind::kExchange;
  op.send_offset = 1;
  op.recv_offset = -1;
  op.message_bytes = bytes;
  op.transport = model::Transport::kCopyEngine;
  return sim::idle_seconds(sim::plan_communication(op, 2, cost), cost);
}

calibrate::Measurement collective_point(const std::string& gpu, const std::string& collective,
                                        const std::string& algorithm, const Draw& d, double seconds, size_t index) {
  calibrate::Measurement m;
  m.kind = "collective";
  m.gpu = gpu;
  m.collective = collective;
  m.algorithm = algorithm;
  m.ranks = d.ranks;
  m.bytes = d.bytes;
  m.median_s = seconds;
  m.origin = "synthetic.jsonl:" + std::to_string(index + 1);
  return m;
}

// A deterministic +-5% spread around the model, so that no fit is exact.
double noisy(double seconds, size_t index) {
  return seconds * (1 + 0.05 * std::sin(1.7 * static_cast<double>(index)));
}

// Every point's error in the fit named `name` is that of `predicted` (the plan under the fitted
// profile), exactly as the fitter computes an error; every point has one.
void check_fit_predicts(const calibrate::ProfileFit& fit, const std::string& name,
                        const std::vector<calibrate::Measurement>& points,
                        const std::function<double(const calibrate::Measurement&)>& predicted) {
  const auto c = std::find_if(fit.fits.begin(), fit.fits.end(), [&](const auto& f) { return f.name == name; });
  REQUIRE(c != fit.fits.end());
  REQUIRE(c->errors.size() == points.size());
  for (const calibrate::PointError& e : c->errors) {
    const auto m = std::find_if(points.begin(), points.end(), [&](const auto& p) { return p.origin == e.origin; });
    REQUIRE(m != points.end());
    INFO(e.origin << ": " << m->ranks << " ranks, " << m->bytes << " B");
    CHECK(e.error_pct == 100.0 * (predicted(*m) / m->median_s - 1.0));
  }
}

// The validation report predicts every point under the fitted profile as `predicted` does: a collective
// simulated alone (the engine's flows end where the plan's idle time says, to SimGrid's timing precision:
// 1e-6 relative, 10 ns over a chain of tiny flows), a copy bit for bit.
void check_report_predicts(const calibrate::ProfileFit& fit, const sim::GpuSpec& gpu,
                           const std::vector<calibrate::Measurement>& points,
                           const std::function<double(const calibrate::Measurement&)>& predicted) {
  for (const calibrate::Measurement& m : points) {
    INFO(m.origin << ": " << m.ranks << " ranks, " << m.bytes << " B");
    const double reported = calibrate::predicted_seconds(m, gpu, fit.profile);
    if (m.kind == "memcpy") {
      CHECK(reported == predicted(m));
    } else {
      CHECK(reported == Approx(predicted(m)).epsilon(1e-6).margin(1e-8));
    }
  }
}

}  // namespace

TEST_CASE("a ring's closed form is its plan's idle time and the ring fit's prediction, at random sizes and ranks") {
  const sim::CostModel cost = test::h100_cost();
  const sim::CostProfile& p = cost.profile();
  for (const Draw& d : random_draws(200)) {
    for (CollectiveKind kind :
         {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
      INFO(d.ranks << " ranks, " << d.bytes << " B, " << model::to_string(kind));
      const int steps = sim::ring_step_count(kind, d.ranks);
      const double closed = sim::ring_seconds(p.nccl, steps, d.bytes, d.ranks, cost.port_Bps(), p.nccl_call_latency_s);
      CHECK(closed == plan_seconds(cost, kind, d.bytes, d.ranks, CollectiveAlgorithm::kRing, model::Protocol::kSimple));
      const calibrate::RingSample sample{d.ranks, d.bytes, 0, steps};
      CHECK(closed == calibrate::ring_seconds(p.nccl, sample, cost.gpu().nvlink_Bps, p.nccl_call_latency_s));
    }
  }
  // Fitted on all-gathers and all-reduces (two step counts: the call latency too) in one or two regimes.
  calibrate::RingRegimes truth;
  truth.has_small = true;
  truth.small = {0.5e-6, 0.3};
  truth.simple = {3e-6, 0.75};
  truth.call_latency_s = 20e-6;
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  std::vector<calibrate::Measurement> points;
  for (const Draw& d : random_draws(24)) {
    const bool all_reduce = points.size() % 3 == 0;
    const calibrate::RingSample s{d.ranks, d.bytes, 0, all_reduce ? 2 * (d.ranks - 1) : 0};
    const double t = noisy(calibrate::ring_regimes_seconds(truth, s, gpu.nvlink_Bps), points.size());
    points.push_back(collective_point("h100-sxm", all_reduce ? "allreduce" : "allgather", "ring", d, t, points.size()));
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &p, "h100-sxm");
  const sim::CostModel fitted(gpu, fit.profile);
  const auto ring_plan = [&](const calibrate::Measurement& m) {
    const CollectiveKind kind = *model::collective_kind_named(m.collective);
    return plan_seconds(fitted, kind, m.bytes, m.ranks, CollectiveAlgorithm::kRing);
  };
  check_fit_predicts(fit, "nccl", points, ring_plan);
  check_report_predicts(fit, gpu, points, ring_plan);
}

TEST_CASE(
    "a one-shot's closed form is its plan's idle time and the one-shot fit's prediction, at random sizes and ranks") {
  const sim::CostModel cost = test::h100_cost();
  REQUIRE(cost.profile().one_shot);
  for (const Draw& d : random_draws(200)) {
    for (CollectiveKind kind :
         {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
      INFO(d.ranks << " ranks, " << d.bytes << " B, " << model::to_string(kind));
      CHECK(sim::one_shot_seconds(*cost.profile().one_shot, kind, d.bytes, d.ranks, cost.port_Bps()) ==
            plan_seconds(cost, kind, d.bytes, d.ranks, CollectiveAlgorithm::kDirect));
    }
  }
  const sim::TransportParams truth{5e-6, 0.8};
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  std::vector<calibrate::Measurement> points;
  for (const Draw& d : random_draws(12)) {
    const double t = sim::one_shot_seconds(truth, CollectiveKind::kAllReduce, d.bytes, d.ranks, gpu.nvlink_Bps);
    points.push_back(collective_point("h100-sxm", "allreduce", "one_shot", d, noisy(t, points.size()), points.size()));
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &cost.profile(), "h100-sxm");
  const sim::CostModel fitted(gpu, fit.profile);
  const auto one_shot_plan = [&](const calibrate::Measurement& m) {
    return plan_seconds(fitted, CollectiveKind::kAllReduce, m.bytes, m.ranks, CollectiveAlgorithm::kDirect);
  };
  check_fit_predicts(fit, "one_shot", points, one_shot_plan);
  check_report_predicts(fit, gpu, points, one_shot_plan);
}

TEST_CASE(
    "a two-shot's closed form is its plan's idle time and the two-shot fit's prediction, at random sizes and ranks") {
  const sim::CostModel cost = test::h100_cost();
  REQUIRE(cost.profile().two_shot);
  for (const Draw& d : random_draws(200)) {
    INFO(d.ranks << " ranks, " << d.bytes << " B");
    CHECK(sim::two_shot_seconds(*cost.profile().two_shot, d.bytes, d.ranks, cost.port_Bps()) ==
          plan_seconds(cost, CollectiveKind::kAllReduce, d.bytes, d.ranks, CollectiveAlgorithm::kTwoShot));
  }
  const sim::TransportParams truth{7e-6, 0.65};
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  std::vector<calibrate::Measurement> points;
  for (const Draw& d : random_draws(12)) {
    const double t = noisy(sim::two_shot_seconds(truth, d.bytes, d.ranks, gpu.nvlink_Bps), points.size());
    points.push_back(collective_point("h100-sxm", "allreduce", "two_shot", d, t, points.size()));
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &cost.profile(), "h100-sxm");
  const sim::CostModel fitted(gpu, fit.profile);
  const auto two_shot_plan = [&](const calibrate::Measurement& m) {
    return plan_seconds(fitted, CollectiveKind::kAllReduce, m.bytes, m.ranks, CollectiveAlgorithm::kTwoShot);
  };
  check_fit_predicts(fit, "two_shot", points, two_shot_plan);
  check_report_predicts(fit, gpu, points, two_shot_plan);
}

TEST_CASE(
    "an NVLS all-reduce's closed form is its plan's idle time and the NVLS fit's prediction, at random sizes and "
    "ranks") {
  const sim::CostModel cost(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  const sim::CostProfile& p = cost.profile();
  REQUIRE(p.nvls);
  for (const Draw& d : random_draws(200)) {
    INFO(d.ranks << " ranks, " << d.bytes << " B");
    CHECK(sim::nvls_seconds(*p.nvls, d.bytes, d.ranks, cost.port_Bps(), p.nccl_call_latency_s) ==
          plan_seconds(cost, CollectiveKind::kAllReduce, d.bytes, d.ranks, CollectiveAlgorithm::kNvls));
  }
  const sim::TransportParams truth{28e-6, 0.5};
  const sim::GpuSpec& gpu = cost.gpu();
  std::vector<calibrate::Measurement> points;
  for (const Draw& d : random_draws(12)) {
    const double t = sim::nvls_seconds(truth, d.bytes, d.ranks, gpu.nvlink_Bps, p.nccl_call_latency_s);
    points.push_back(collective_point("h200-sxm", "allreduce", "nvls", d, noisy(t, points.size()), points.size()));
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &p, "h200-sxm");
  const sim::CostModel fitted(gpu, fit.profile);
  const auto nvls_plan = [&](const calibrate::Measurement& m) {
    return plan_seconds(fitted, CollectiveKind::kAllReduce, m.bytes, m.ranks, CollectiveAlgorithm::kNvls);
  };
  check_fit_predicts(fit, "nvls", points, nvls_plan);
  check_report_predicts(fit, gpu, points, nvls_plan);
}

TEST_CASE("a copy step's closed form is its plan's idle time and the copy-engine fit's prediction, at random sizes") {
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), one_pair_profile());
  for (const Draw& d : random_draws(200)) {
    INFO(d.bytes << " B");
    const double closed = sim::copy_step_seconds(cost.profile().copy_engine, d.bytes, cost.port_Bps());
    CHECK(closed == copy_plan_seconds(cost, d.bytes));
    CHECK(closed == cost.step_seconds(model::Transport::kCopyEngine, d.bytes));
  }
  const sim::TransportParams truth{3e-6, 0.85};
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  std::vector<calibrate::Measurement> points;
  for (const Draw& d : random_draws(12)) {
    calibrate::Measurement m;
    m.kind = "memcpy";
    m.gpu = "h100-sxm";
    m.path = "peer";
    m.bytes = d.bytes;
    m.median_s = noisy(sim::copy_step_seconds(truth, d.bytes, gpu.nvlink_Bps), points.size());
    m.origin = "synthetic.jsonl:" + std::to_string(points.size() + 1);
    points.push_back(m);
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &cost.profile(), "h100-sxm");
  const sim::CostModel fitted(gpu, fit.profile);
  const auto copy_plan = [&](const calibrate::Measurement& m) { return copy_plan_seconds(fitted, m.bytes); };
  check_fit_predicts(fit, "copy_engine", points, copy_plan);
  check_report_predicts(fit, gpu, points, copy_plan);
}

TEST_CASE("a copy-engine fit of one size keeps the assumed latency and predicts with the copy step's closed form") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostProfile base = one_pair_profile();
  // Two copies of 1 GiB over a link of half the GPU's NVLink rate, at 80% and 90% of it.
  std::vector<calibrate::Measurement> points;
  for (double efficiency : {0.8, 0.9}) {
    calibrate::Measurement m;
    m.kind = "memcpy";
    m.gpu = "h100-sxm";
    m.path = "peer";
    m.bytes = 1073741824;
    m.spec_GBps = gpu.nvlink_Bps / 2e9;
    m.median_s = m.bytes / (efficiency * gpu.nvlink_Bps / 2);
    m.origin = "synthetic.jsonl:" + std::to_string(points.size() + 1);
    points.push_back(m);
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &base, "h100-sxm");
  CHECK(fit.profile.copy_engine.link_efficiency == Approx(0.85));
  CHECK(fit.profile.copy_engine.step_latency_s == base.copy_engine.step_latency_s);
  // On the GPU's NVLink the same copy moves twice the bytes in the same time.
  const sim::CostModel fitted(gpu, fit.profile);
  const auto copy_plan = [&](const calibrate::Measurement& m) { return copy_plan_seconds(fitted, 2 * m.bytes); };
  check_fit_predicts(fit, "copy_engine", points, copy_plan);
  check_report_predicts(fit, gpu, points, copy_plan);
}

TEST_CASE(
    "a ring across nodes bound by its NICs takes the ring's closed form over the node's NICs, as the network "
    "fit predicts") {
  const sim::GpuSpec gpu = test::gpu_preset("b200");
  const sim::CostProfile p = test::profile_preset("b200");
  REQUIRE(p.network);
  REQUIRE(p.nccl_small);
  for (const Draw& d : random_draws(100, 16, 64, 8)) {
    INFO(d.ranks << " ranks, " << d.bytes << " B");
    const int nodes = d.ranks / gpu.gpus_per_node;
    const sim::CostModel cost(gpu, p, sim::measured_fabric(gpu, nodes, 0));
    const double node_nics_Bps = gpu.gpus_per_node * cost.fabric().nic_Bps;
    // The faster regime's NVLink step is faster than the step between nodes: the ring runs the regime
    // whose step (the slower of its NVLink hop and the network hop) is shortest, so the network hop sets
    // each step.
    const double nvlink_step_s = std::min(sim::step_seconds(p.nccl, d.bytes / d.ranks, cost.port_Bps()),
                                          sim::step_seconds(*p.nccl_small, d.bytes / d.ranks, cost.port_Bps()));
    REQUIRE(nvlink_step_s < sim::step_seconds(*p.network, d.bytes / d.ranks, node_nics_Bps));
    const int steps = 2 * (d.ranks - 1);
    const double closed = sim::ring_seconds(*p.network, steps, d.bytes, d.ranks, node_nics_Bps, p.nccl_call_latency_s);
    CHECK(closed == plan_seconds(cost, CollectiveKind::kAllReduce, d.bytes, d.ranks, CollectiveAlgorithm::kRing));
  }
  // The network fit on one system: 16 ranks in 2 nodes, 25 GB/s NICs.
  const sim::TransportParams truth{10e-6, 0.8};
  std::vector<calibrate::Measurement> points;
  for (Draw d : random_draws(8)) {
    d.ranks = 16;
    const double t = sim::ring_seconds(truth, 2 * (d.ranks - 1), d.bytes, d.ranks, 8 * 25e9, p.nccl_call_latency_s);
    points.push_back(collective_point("b200", "allreduce", "ring", d, noisy(t, points.size()), points.size()));
    points.back().nodes = 2;
    points.back().nic_GBps = 25;
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &p, "b200");
  const sim::CostModel fitted(gpu, fit.profile, sim::measured_fabric(gpu, 2, 25e9));
  const auto network_plan = [&](const calibrate::Measurement& m) {
    return plan_seconds(fitted, CollectiveKind::kAllReduce, m.bytes, m.ranks, CollectiveAlgorithm::kRing);
  };
  check_fit_predicts(fit, "network", points, network_plan);
  check_report_predicts(fit, gpu, points, network_plan);
}

TEST_CASE("the tree fit predicts with the tree plan's idle time, at random sizes on two and four nodes") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostProfile base = test::profile_preset("h100-sxm");
  const sim::TransportParams truth{7e-6, 0.8};
  std::vector<calibrate::Measurement> points;
  for (Draw d : random_draws(12, 16, 32, 16)) {
    const int nodes = d.ranks / gpu.gpus_per_node;
    const double t = calibrate::tree_seconds(truth, {d.ranks, nodes, 0, d.bytes, 0}, gpu, base);
    points.push_back(collective_point("h100-sxm", "allreduce", "tree", d, noisy(t, points.size()), points.size()));
    points.back().nodes = nodes;
  }
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu, &base, "h100-sxm");
  const auto tree_plan = [&](const calibrate::Measurement& m) {
    const sim::CostModel fitted(gpu, fit.profile, sim::measured_fabric(gpu, m.nodes, 0));
    return plan_seconds(fitted, CollectiveKind::kAllReduce, m.bytes, m.ranks, CollectiveAlgorithm::kTree);
  };
  check_fit_predicts(fit, "tree", points, tree_plan);
  // Not the report: it simulates the tree, whose ranks the engine lets run ahead of the plan's lockstep
  // steps, so its times differ from the idle time (by up to about 4% here).
}
