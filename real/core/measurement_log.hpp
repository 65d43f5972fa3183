// Writes measured points as JSON lines (the calibrate/ schema) while a run goes on: each line is
// flushed to OUT.partial as soon as it is measured, and OUT appears, whole, only when the run ends
// well. A crash leaves OUT untouched and the points so far in OUT.partial.
#pragma once

#include <fstream>
#include <string>

#include "base/measurement.hpp"

namespace tpsim::real {

class MeasurementLog {
 public:
  // An empty path keeps nothing; "-" writes each line to stdout. Throws InputError if OUT.partial
  // cannot be written.
  explicit MeasurementLog(std::string path);

  void add(const calibrate::Measurement& m);
  // Renames OUT.partial to OUT; without it OUT is never written.
  void finish();

  int count() const { return count_; }

 private:
  std::string path_;
  std::ofstream partial_;
  int count_ = 0;
};

}  // namespace tpsim::real
