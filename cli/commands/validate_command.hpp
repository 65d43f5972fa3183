// `tpsim validate`: predicted against measured for composite measurements (real/'s overlap pairs,
// async-TP pipelines and DTP chains), with a given profile or one fitted on held-out points.
#pragma once

#include <string>
#include <vector>

#include "cli/commands/command.hpp"

namespace tpsim::cli {

struct ValidateOptions {
  std::vector<std::string> files;
  std::string profile = "default";  // a profile file, or the measurements' GPU's default profile
  std::string holdout = "none";     // none, kind, size (calibrate/validation/composite_validation.hpp)
  std::string measured_on;          // the GPU of the single-op points (default: as calibrate decides)
  std::string json_out;
};

int run_validate(const ValidateOptions& options);

// Registers `tpsim validate` and its options on `app`.
void add_validate_command(CLI::App& app, Commands& commands);

}  // namespace tpsim::cli
