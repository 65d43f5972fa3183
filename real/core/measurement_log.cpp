// JSON-lines output with a partial file renamed into place at the end.
#include "real/core/measurement_log.hpp"

#include <filesystem>
#include <iostream>

#include "base/input_error.hpp"

namespace tpsim::real {

MeasurementLog::MeasurementLog(std::string path) : path_(std::move(path)) {
  if (path_.empty() || path_ == "-") return;
  partial_.open(path_ + ".partial", std::ios::binary | std::ios::trunc);
  if (!partial_) throw InputError(path_ + ": cannot write here (check the directory exists and is writable)");
}

void MeasurementLog::add(const calibrate::Measurement& m) {
  ++count_;
  if (path_.empty()) return;
  const std::string line = calibrate::to_json(m).dump() + "\n";
  if (path_ == "-") {
    std::cout << line << std::flush;
    return;
  }
  partial_ << line << std::flush;
  if (!partial_) throw InputError(path_ + ".partial: write failed");
}

void MeasurementLog::finish() {
  if (path_.empty() || path_ == "-") return;
  partial_.close();
  std::error_code error;
  std::filesystem::rename(path_ + ".partial", path_, error);
  if (error) throw InputError(path_ + ": cannot move the measurements into place: " + error.message());
}

}  // namespace tpsim::real
