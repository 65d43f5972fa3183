// Invariants of a scenario run, and the refusing writer of tests/cli/expected_times.json.
#include "cli/expected_times.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace tpsim::test {
namespace {

constexpr double kRelTol = 1e-12;
// Sums of many spans (a pipeline's passes, a generation's steps) round at about 1e-15 of each term: far below this.
constexpr double kSumTol = 1e-9;

}  // namespace

std::vector<std::string> broken_invariants(const std::string& point, const std::vector<sim::VariantRun>& variants) {
  std::vector<std::string> broken;
  double fastest_with_comm = 1e300;
  std::optional<double> nocomm;
  for (const sim::VariantRun& v : variants) {
    const sim::Metrics& m = v.metrics;
    const std::string where = point + ", variant " + v.variant.name + ": ";
    if (!(m.time_s > 0)) broken.push_back(where + "time_s " + std::to_string(m.time_s) + " is not positive");
    if (!(m.compute_s <= m.time_s * (1 + kRelTol))) broken.push_back(where + "compute_s exceeds time_s");
    if (!(m.exposed_comm_s <= m.comm_s * (1 + kRelTol))) broken.push_back(where + "exposed_comm_s exceeds comm_s");
    for (const auto& [name, seconds] : {std::pair{"idle_s", m.idle_s}, std::pair{"exposed_comm_s", m.exposed_comm_s},
                                        std::pair{"exposed_data_comm_s", m.exposed_data_comm_s},
                                        std::pair{"exposed_expert_comm_s", m.exposed_expert_comm_s}}) {
      if (!(seconds >= -m.time_s * kSumTol)) broken.push_back(where + name + " " + std::to_string(seconds) + " < 0");
    }
    // Each GPU's step is its compute, the communication no compute covers, and its idle time.
    if (!(std::abs(m.compute_s + m.exposed_comm_s + m.idle_s - m.time_s) <= m.time_s * kSumTol)) {
      broken.push_back(where + "compute_s + exposed_comm_s + idle_s differs from time_s");
    }
    if (v.pipeline && !(v.pipeline->send_exposed_s >= 0)) {
      broken.push_back(where + "the sends' exposed time " + std::to_string(v.pipeline->send_exposed_s) + " < 0");
    }
    if (v.variant.mode == model::TpMode::kNoComm) {
      nocomm = m.time_s;
      // Its TP group is free; a data-parallel job's replicas still synchronise (all of comm_s is theirs).
      if (m.comm_s != m.data_comm_s) {
        broken.push_back(where + "nocomm communicates (comm_s " + std::to_string(m.comm_s) + ")");
      }
      if (const double tp_s = sim::exposed_by_dimension(v).tp_s; tp_s != 0) {
        broken.push_back(where + "nocomm exposes TP communication (" + std::to_string(tp_s) + " s)");
      }
    } else {
      fastest_with_comm = std::min(fastest_with_comm, m.time_s);
    }
  }
  if (nocomm && *nocomm > fastest_with_comm) {
    broken.push_back(point + ": nocomm is slower than the fastest variant that communicates");
  }
  return broken;
}

void record_expected_times(const std::string& path, const nlohmann::ordered_json& times,
                           const std::vector<std::string>& broken) {
  if (!broken.empty()) {
    std::string message = "TPSIM_UPDATE_EXPECTED: not re-recording " + path + ": " + std::to_string(broken.size()) +
                          " invariant(s) failed in this run (fix the model first):";
    for (const std::string& line : broken) message += "\n  " + line;
    throw std::runtime_error(message);
  }
  std::ofstream(path) << times.dump(2) << "\n";
}

}  // namespace tpsim::test
