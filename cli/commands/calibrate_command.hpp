// `tpsim calibrate`: fit a profile from measurement files, convert the public tables into
// measurements, and report predicted against measured.
#pragma once

#include <string>
#include <vector>

#include "cli/commands/command.hpp"

namespace tpsim::cli {

struct CalibrateOptions {
  std::vector<std::string> files;  // measurement JSON-lines files
  std::string gpu;                 // the preset the profile is for (default: the measurements' GPU)
  std::string measured_on;         // the preset whose peaks the fractions are relative to
  std::string out = "-";
  std::string base;  // unfitted sections from this profile file, or this GPU preset's default profile
  std::vector<std::string> validation_only;  // report: files whose points are never fitted
};

int calibrate_fit(const CalibrateOptions& options);
int calibrate_convert(const std::string& data_dir, const std::string& out_dir);
int calibrate_report(const CalibrateOptions& options);

// Registers `tpsim calibrate` (a fit), `calibrate convert` and `calibrate report` and their options on `app`.
void add_calibrate_command(CLI::App& app, Commands& commands);

}  // namespace tpsim::cli
