// Reads measurement files, resolves the GPU presets they refer to, and writes profiles or reports.
#include "cli/calibrate_command.hpp"

#include <filesystem>
#include <iostream>
#include <optional>

#include "calibrate/profile_fit.hpp"
#include "calibrate/profile_transfer.hpp"
#include "calibrate/public_convert.hpp"
#include "calibrate/public_report.hpp"
#include "cli/measurement_files.hpp"
#include "cli/output_file.hpp"
#include "model/input_error.hpp"
#include "model/presets.hpp"

namespace tpsim::cli {

namespace {

// --base: a profile file, or a GPU preset's default profile (named so in the profile written).
std::optional<sim::CostProfile> base_profile(const std::string& base, std::string& base_name) {
  if (base.empty()) return std::nullopt;
  if (model::find_preset("gpus", base, "yaml")) {
    std::optional<sim::CostProfile> profile = sim::default_profile(base);
    if (!profile) throw InputError("--base " + base + ": " + sim::no_default_profile_message(base));
    base_name = "the default profile of " + base;
    return profile;
  }
  base_name = base;
  return sim::load_profile_file(base);
}

}  // namespace

int calibrate_fit(const CalibrateOptions& options) {
  const std::vector<calibrate::Measurement> all = read_all(options.files, options.measured_on);
  const std::string measured_on = options.measured_on.empty() ? measured_gpu(all) : options.measured_on;
  const sim::GpuSpec gpu = gpu_preset(measured_on, "--measured-on");
  const std::string target = options.gpu.empty() ? measured_on : options.gpu;
  const sim::GpuSpec target_gpu = gpu_preset(target, "--gpu");
  std::string base_name;
  const std::optional<sim::CostProfile> base = base_profile(options.base, base_name);
  calibrate::ProfileFit fit = calibrate::fit_profile(all, gpu, base ? &*base : nullptr, base_name);
  calibrate::transfer_profile(fit, gpu, target_gpu);
  std::vector<std::string> names;
  for (const std::string& file : options.files) names.push_back(file);
  write_output(options.out, calibrate::profile_yaml(fit, target, names));
  if (fit.other_gpu_points > 0) {
    std::cerr << "calibrate: " << fit.other_gpu_points << " points of other GPUs than " << gpu.name
              << " fit nothing here (only multi-node points fit the network section whatever their GPU)\n";
  }
  for (const std::string& name : fit.not_fitted) {
    std::cerr << "calibrate: no measurements for " << name << ": its "
              << (base ? "values from " + base_name : std::string("default values")) << " stay (the profile says so)\n";
  }
  return 0;
}

int calibrate_convert(const std::string& data_dir, const std::string& out_dir) {
  const auto converted = calibrate::convert_public_tables(data_dir);
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) throw InputError(out_dir + ": cannot create the folder: " + error.message());
  for (const auto& [name, measurements] : converted) {
    write_output(out_dir + "/" + name, calibrate::to_jsonl(measurements));
    std::cerr << "calibrate: " << measurements.size() << " measurements -> " << out_dir << "/" << name << "\n";
  }
  return 0;
}

int calibrate_report(const CalibrateOptions& options) {
  std::vector<calibrate::Measurement> all = read_all(options.files, options.measured_on);
  std::vector<bool> validation_only(all.size(), false);
  const std::vector<calibrate::Measurement> extra = read_all(options.validation_only, options.measured_on);
  all.insert(all.end(), extra.begin(), extra.end());
  validation_only.resize(all.size(), true);
  const std::string measured_on = options.measured_on.empty() ? measured_gpu(all) : options.measured_on;
  std::string base_name;
  const std::optional<sim::CostProfile> base = base_profile(options.base, base_name);
  std::cout << calibrate::validation_report(
      all, validation_only, gpu_preset(measured_on, "--measured-on"),
      [](const std::string& name) { return gpu_preset(name, "measurement gpu"); }, base ? &*base : nullptr);
  return 0;
}

}  // namespace tpsim::cli
