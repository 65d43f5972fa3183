// Closed-form weighted linear regression of ring collective times.
#include "calibrate/ring_fit.hpp"

#include <algorithm>
#include <cmath>

#include "calibrate/csv_table.hpp"
#include "model/input_error.hpp"

namespace tpsim::calibrate {

RingFit fit_ring(const std::vector<RingSample>& samples, double link_Bps) {
  if (samples.size() < 2) throw InputError("a ring fit needs at least two measurements");
  const int n = samples.front().ranks;
  // Minimise sum(((a + b S - t) / t)^2): normal equations with weights 1/t^2.
  double sw = 0, sws = 0, swss = 0, swt = 0, swst = 0;
  for (const RingSample& s : samples) {
    if (s.ranks != n) throw InputError("a ring fit needs samples of one rank count");
    const double w = 1.0 / (s.seconds * s.seconds);
    sw += w;
    sws += w * s.tensor_bytes;
    swss += w * s.tensor_bytes * s.tensor_bytes;
    swt += w * s.seconds;
    swst += w * s.tensor_bytes * s.seconds;
  }
  const double det = sw * swss - sws * sws;
  const double a = (swt * swss - sws * swst) / det;
  const double b = (sw * swst - sws * swt) / det;
  RingFit fit;
  fit.points = samples.size();
  fit.params.step_latency_s = a / (n - 1);
  fit.params.link_efficiency = (n - 1) / (n * link_Bps * b);
  for (const RingSample& s : samples) {
    fit.max_abs_error_pct =
        std::max(fit.max_abs_error_pct, 100.0 * std::abs((a + b * s.tensor_bytes) / s.seconds - 1.0));
  }
  return fit;
}

std::vector<RingSample> read_ring_table(const std::string& csv_path, const std::string& implementation) {
  const CsvTable table = CsvTable::read_file(csv_path);
  std::vector<RingSample> samples;
  for (size_t r = 0; r < table.rows(); ++r) {
    const std::string& kind = table.at(r, "collective");
    if (table.at(r, "implementation") != implementation || (kind != "allgather" && kind != "reducescatter")) continue;
    samples.push_back({static_cast<int>(table.number(r, "ranks")), table.number(r, "message_bytes"),
                       table.number(r, "time_us") * 1e-6});
  }
  return samples;
}

}  // namespace tpsim::calibrate
