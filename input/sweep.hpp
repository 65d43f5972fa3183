// A scenario's sweep: the cartesian product of its `sweep:` axes, each point a fully checked scenario.
// Axes are dotted paths: workload.<key>, hardware.<key>, parallelism.<key>, variants.<name>.<key>,
// model, calibration. The last axis varies fastest.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/input_error.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

using AxisValues = std::vector<std::pair<std::string, std::string>>;  // (axis, value as written)

// The points of a sweep, built on demand so that a large sweep holds no scenarios in memory.
class SweepPlan {
 public:
  // Throws InputError at a sweep entry that is not a non-empty list.
  explicit SweepPlan(const Scenario& base);

  size_t size() const { return size_; }
  AxisValues values(size_t index) const;
  // The scenario of point `index`; throws InputError (at the offending value) if the combination
  // is invalid, e.g. a tp that does not divide the heads, or at an axis that is not a valid path.
  Scenario point(size_t index) const;

 private:
  std::vector<size_t> digits(size_t index) const;
  // `error` of an invalid point, located at the sweep value that makes it invalid.
  InputError point_error(const std::vector<size_t>& digits, const InputError& error) const;

  Scenario base_;
  std::vector<std::pair<std::string, std::vector<std::string>>> axes_;
  size_t size_ = 1;
};

struct SweepPoint {
  AxisValues values;
  Scenario scenario;
  std::string error;  // non-empty: this combination is invalid
};

// Every point; a scenario without a sweep is its own single point. An invalid combination carries
// its error when `keep_invalid`, else throws it.
std::vector<SweepPoint> expand_sweep(const Scenario& base, bool keep_invalid = false);

}  // namespace tpsim::model
