// Predicted against measured for every row of the public tables, in-sample (profile fitted on all
// rows) and held out (profile fitted on the even rows of each table, errors on the odd rows).
#pragma once

#include <string>

namespace tpsim::calibrate {

// Markdown tables for GEMMs (H100), NCCL collectives (8 x H100) and all-reduce busbw (8 x H200).
std::string public_validation_report(const std::string& data_dir);

}  // namespace tpsim::calibrate
