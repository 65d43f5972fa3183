// The validation tables: each measurement simulated alone (collectives on an idle node, or idle
// ib-rail nodes for multi-node points; as measured, else as NCCL chooses) with the in-sample and the
// held-out profile.
#include "calibrate/validation/public_report.hpp"
#include "base/units.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "base/input_error.hpp"
#include "calibrate/fits/fit_measure.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "model/graph/program_builder.hpp"
#include "sim/cost/call_timing.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/isolated_run.hpp"

namespace tpsim::calibrate {
namespace {

struct Stats {
  double sum = 0, max = 0;
  size_t n = 0;
  void add(double pct) {
    sum += std::abs(pct);
    max = std::max(max, std::abs(pct));
    ++n;
  }
  std::string text() const {
    return n ? "mean |error| " + model::format_number("%.1f%%", sum / n) + ", max " +
                   model::format_number("%.1f%%", max)
             : std::string("no points");
  }
};

// The point's system: its GPU in one NVSwitch node, or in m.nodes ib-rail nodes.
sim::CostModel cost_of(const Measurement& m, const sim::GpuSpec& gpu, const sim::CostProfile& profile) {
  return sim::CostModel(gpu, profile, sim::measured_fabric(gpu, m.nodes, m.nic_GBps * 1e9));
}

}  // namespace

double predicted_seconds(const Measurement& m, const sim::GpuSpec& gpu, const sim::CostProfile& profile,
                         std::string* algorithm) {
  const sim::CostModel cost = cost_of(m, gpu, profile);
  if (m.kind == "gemm") {
    const model::GemmShape s{m.m, m.n, m.k};
    return cost.gemm_seconds(s, model::gemm_bytes(s, model::kBf16Bytes));
  }
  if (m.kind == "memcpy") {
    // Pulls while every rank pulls run as an exchange's do; a single copy at the one-pair rate.
    const sim::TransportParams copy_engine =
        m.path == "peer_all_ranks" ? cost.exchange_transport(model::Transport::kCopyEngine) : profile.copy_engine;
    return copy_seconds(copy_engine, m, cost.port_Bps());
  }
  model::LayerGraph graph(m.ranks);
  model::ProgramBuilder builder(graph, model::kBf16Bytes);
  // The algorithm the point was measured with, when the source says; NCCL's choice when it does not (or when what
  // it ran was inferred from NCCL's tuner, so that a profile without that regime runs NCCL's next choice, as a
  // scenario would); for a kernel tpsim does not model, the fastest plan the profile has (auto) stands in.
  const bool inferred = m.provenance.contains("nccl_choice");
  if (const auto algorithm = model::collective_algorithm_named(m.algorithm); algorithm && !inferred) {
    builder.set_collective_algorithm(*algorithm);
  } else if (m.algorithm != "unknown" && !inferred) {
    builder.set_collective_algorithm(model::CollectiveAlgorithm::kAuto);
  }
  if (const auto protocol = model::protocol_named(m.protocol); protocol && !inferred) {
    builder.set_collective_protocol(*protocol);
  }
  const model::OpId op = builder.collective("c", *model::collective_kind_named(m.collective), m.bytes, "", {});
  const sim::CommPlan plan = sim::plan_communication(graph.op(op), m.ranks, cost);
  if (algorithm) *algorithm = model::to_string(plan.algorithm);
  // The call as the point timed it: the device's time, and the host's where the way it was timed shows it.
  return sim::as_called_seconds(*value_named(sim::kCallTimingNames, m.timed_as), sim::simulate(graph, cost).makespan_s,
                                profile, plan.nccl_call);
}

namespace {

std::string size_text(const Measurement& m) {
  if (m.kind == "gemm") return std::to_string(m.m) + " x " + std::to_string(m.n) + " x " + std::to_string(m.k);
  return model::format_number("%.0f", m.bytes) + " B" +
         (m.kind == "collective" ? ", " + std::to_string(m.ranks) + " ranks" : "");
}

// The held-out columns of a point's row: "(fitted)" for a point the held-out fit used, else its prediction by
// that fit and the error (added to `held`), or why that fit cannot predict it (the in-sample columns stand).
std::string held_out_cells(const Measurement& m, const sim::GpuSpec& gpu, const sim::CostProfile& half, bool held_out,
                           Stats& held) {
  if (!held_out) return "(fitted) | ";
  double b = 0;
  try {
    b = predicted_seconds(m, gpu, half);
  } catch (const InputError& e) {
    return std::string("not predicted by the held-out fit: ") + e.what() + " | ";
  }
  const double eb = 100 * (b / m.median_s - 1);
  held.add(eb);
  return model::format_number("%.1f", b * 1e6) + " | " + model::format_number("%+.1f%%", eb);
}

}  // namespace

std::string validation_report(const std::vector<Measurement>& measurements, const std::vector<bool>& validation_only,
                              const sim::GpuSpec& measured_on,
                              const std::function<sim::GpuSpec(const std::string&)>& gpus,
                              const sim::CostProfile* base) {
  std::map<std::string, std::vector<size_t>> groups;  // "gpu kind collective (as run)" -> points
  for (size_t i = 0; i < measurements.size(); ++i) {
    const Measurement& m = measurements[i];
    // Composites and decode runs are not single-op costs (validate, and the decode fit's own errors, cover them).
    if (m.is_composite() || m.kind == "decode" || m.path == "device" || m.path == "copy_kernel") continue;
    std::string key = m.gpu + " " + m.kind;
    if (m.kind == "collective") {
      key += " " + m.collective + (m.nodes > 1 ? " over " + std::to_string(m.nodes) + " ib-rail nodes" : "") +
             " (measured as " + m.algorithm + (m.protocol != "unknown" ? ", protocol " + m.protocol : "") + ")";
    }
    groups[key].push_back(i);
  }
  // In-sample: fitted on every point that is not validation-only. Held out: fitted on the even ones
  // of those in each group, reported on the odd ones and on every validation-only point.
  std::vector<Measurement> fitted, even;
  std::vector<bool> held_out(measurements.size(), false);
  for (const auto& [key, points] : groups) {
    size_t fitted_in_group = 0;
    for (size_t i : points) {
      if (validation_only[i]) {
        held_out[i] = true;
        continue;
      }
      fitted.push_back(measurements[i]);
      if (fitted_in_group++ % 2 == 0) {
        even.push_back(measurements[i]);
      } else {
        held_out[i] = true;
      }
    }
  }
  // What cannot be fitted is said, and the report goes on with what could be (the base's or the defaults' values).
  std::string out;
  const auto fit_or_base = [&](const std::vector<Measurement>& points, const std::string& which) {
    try {
      return fit_profile(points, measured_on, base, "the base");
    } catch (const InputError& e) {
      out += "Not fitted (" + which + "): " + e.what() + "\n\n";
      ProfileFit none;
      if (base) none.profile = *base;
      return none;
    }
  };
  const ProfileFit all_fit = fit_or_base(fitted, "in-sample");
  for (const std::string& refusal : all_fit.refused) out += "Refused: " + refusal + ".\n\n";
  const sim::CostProfile& all = all_fit.profile;
  const sim::CostProfile half = fit_or_base(even, "held out").profile;
  // A point no fitter used (an algorithm tpsim does not fit, another system) is held out too.
  std::set<std::string> used;
  for (const ComponentFit& c : all_fit.fits) {
    for (const PointError& e : c.errors) used.insert(e.origin);
  }
  for (size_t i = 0; i < measurements.size(); ++i) {
    if (!used.count(measurements[i].origin)) held_out[i] = true;
  }
  for (const auto& [key, points] : groups) {
    out += "### " + key + "\n\n| size | measured us | predicted us | error | held-out | error | source |\n";
    out += "|---|---|---|---|---|---|---|\n";
    Stats in_sample, held;
    for (size_t i : points) {
      const Measurement& m = measurements[i];
      const sim::GpuSpec gpu = gpus(m.gpu);
      std::string algorithm;
      double a = 0;
      try {
        a = predicted_seconds(m, gpu, all, &algorithm);
      } catch (const InputError& e) {
        out += "| " + size_text(m) + " | " + model::format_number("%.1f", m.median_s * 1e6) +
               " | not predicted: " + e.what() + " | | | | " + m.provenance.value("converted_from", m.origin) + " |\n";
        continue;
      }
      const double ea = 100 * (a / m.median_s - 1);
      in_sample.add(ea);
      out += "| " + size_text(m) + " | " + model::format_number("%.1f", m.median_s * 1e6) + " | " +
             model::format_number("%.1f", a * 1e6) + (algorithm.empty() ? "" : " (" + algorithm + ")") + " | " +
             model::format_number("%+.1f%%", ea) + " | " + held_out_cells(m, gpu, half, held_out[i], held) + " | " +
             m.provenance.value("converted_from", m.origin) + " |\n";
    }
    out += "\nIn-sample: " + in_sample.text() + ". Held-out: " + held.text() + ".\n\n";
  }
  return out;
}

}  // namespace tpsim::calibrate
