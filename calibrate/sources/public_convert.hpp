// Converts the public CSV tables (calibrate/data/public) into the measurement schema, one JSON-lines
// file per table, each point keeping its source row as provenance.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/measurement.hpp"

namespace tpsim::calibrate {

// File name (e.g. "gemm_h100_bf16.jsonl") -> measurements.
std::map<std::string, std::vector<Measurement>> convert_public_tables(const std::string& data_dir);

}  // namespace tpsim::calibrate
