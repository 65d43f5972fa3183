// One DTP delta: the chain tpsim-real dtp runs (model::dtp_chain_steps, walked by real/cuda/dtp_chain),
// the modules of a scenario's tp_mode dtp graph, and the chain tpsim validate simulates for a dtp point
// are the same for the same delta.
#include <catch2/catch.hpp>

#include "calibrate/validation/composite_model.hpp"
#include "model/parallel/dtp_schedule.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::DtpStep;
using model::DtpStepKind;

namespace {

int trailing_number(const std::string& name) {
  return std::stoi(name.substr(name.find_last_not_of("0123456789") + 1));
}

// The graph's ops as chain steps, in issue order (the names model/parallel/dtp.cpp gives them).
std::vector<DtpStep> steps_of(const model::LayerGraph& graph) {
  std::vector<DtpStep> steps;
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const model::Op& op : graph.ops()) {
    const std::string& n = op.name;
    if (n.find("dtp.add_peers_of_module") != std::string::npos) {
      steps.push_back({DtpStepKind::kAddPeerShare, trailing_number(n)});
    } else if (n == "final.all_reduce") {
      steps.push_back({DtpStepKind::kFinalReduce, -1});
    } else if (ends_with(n, ".gemm")) {
      steps.push_back({DtpStepKind::kGemm, op.layer});
    } else if (ends_with(n, ".residual_own")) {
      steps.push_back({DtpStepKind::kAddOwn, op.layer});
    } else if (ends_with(n, ".all_reduce")) {
      steps.push_back({DtpStepKind::kReduce, op.layer});
    } else if (ends_with(n, ".residual")) {
      steps.push_back({DtpStepKind::kAddReduced, op.layer});
    }
  }
  return steps;
}

std::string text(const std::vector<DtpStep>& steps) {
  std::string out;
  for (const DtpStep& s : steps) out += model::to_string(s) + " ";
  return out;
}

calibrate::Measurement dtp_point(int modules, int delta) {
  calibrate::Measurement m;
  m.kind = "dtp";
  m.gpu = "h100-sxm";
  m.m = 256;
  m.n = 1024;
  m.k = 512;
  m.ranks = 4;
  m.modules = modules;
  m.delta = delta;
  return m;
}

}  // namespace

TEST_CASE("delta 1 over four modules: module m's share is added by module m + 2, the last two reduce nothing") {
  using K = DtpStepKind;
  const std::vector<DtpStep> expected = {
      {K::kGemm, 0},   {K::kAddOwn, 0},       {K::kReduce, 0},      {K::kGemm, 1},   {K::kAddOwn, 1},
      {K::kReduce, 1}, {K::kAddPeerShare, 0}, {K::kGemm, 2},        {K::kAddOwn, 2}, {K::kAddPeerShare, 1},
      {K::kGemm, 3},   {K::kAddOwn, 3},       {K::kFinalReduce, -1}};
  CHECK(text(model::dtp_chain_steps({4, 1})) == text(expected));
}

TEST_CASE("delta 0 is blocking TP: every module's reduction is added before the next module runs") {
  using K = DtpStepKind;
  const std::vector<DtpStep> expected = {{K::kGemm, 0}, {K::kReduce, 0}, {K::kAddReduced, 0},
                                         {K::kGemm, 1}, {K::kReduce, 1}, {K::kAddReduced, 1}};
  CHECK(text(model::dtp_chain_steps({2, 0})) == text(expected));
}

TEST_CASE("the chain real/ runs is the chain validate simulates, for every delta and its blocking baseline") {
  for (int modules : {1, 3, 8}) {
    for (int delta : {0, 1, 2, 7}) {
      INFO(modules << " modules, delta " << delta);
      const calibrate::Measurement m = dtp_point(modules, delta);
      CHECK(text(steps_of(calibrate::composite_graph(m, false))) == text(model::dtp_chain_steps({modules, delta})));
      CHECK(text(steps_of(calibrate::composite_graph(m, true))) == text(model::dtp_chain_steps({modules, 0})));
    }
  }
}

TEST_CASE("a scenario's dtp layers reduce and add exactly what the same delta's chain schedule says") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const int64_t layers = 3;
  const int modules = 2 * layers;
  for (int delta : {0, 1, 2}) {
    INFO("delta " << delta);
    model::Variant v = test::variant(model::TpMode::kDtp);
    v.delta = delta;
    const model::LayerGraph graph = model::build_layer_graph(arch, test::decode_workload(2, 256, layers), 8, v);
    const model::DtpSchedule schedule{modules, delta};
    std::vector<int> reduced, expected_reduced;
    int peer_adds = 0;
    for (const model::Op& op : graph.ops()) {
      const bool partials = op.name.find("partials.all_reduce") != std::string::npos;
      const bool blocking = op.name.find("_proj.all_reduce") != std::string::npos;
      if (partials || blocking) reduced.push_back(op.module);
      if (op.name.find("dtp.add_peers_of_module") == std::string::npos) continue;
      ++peer_adds;
      CHECK(schedule.peer_share_before(op.module) == trailing_number(op.name));
    }
    for (int m = 0; m < modules; ++m) {
      if (schedule.reduces(m)) expected_reduced.push_back(m);
      if (schedule.peer_share_before(m) >= 0) --peer_adds;
    }
    CHECK(reduced == expected_reduced);
    CHECK(peer_adds == 0);
    CHECK((model::dtp_chain_steps(schedule).back().kind == DtpStepKind::kFinalReduce) ==
          (graph.ops().back().name == "final.all_reduce"));
  }
}
