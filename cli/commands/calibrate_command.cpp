// Reads measurement files, resolves the GPU presets they refer to, and writes profiles or reports.
#include "cli/commands/calibrate_command.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/input_error.hpp"
#include "calibrate/fits/decode_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/profile/profile_transfer.hpp"
#include "calibrate/sources/public_convert.hpp"
#include "calibrate/validation/public_report.hpp"
#include "cli/commands/measurement_files.hpp"
#include "cli/output_file.hpp"
#include "cli/report/trace_report.hpp"
#include "input/presets.hpp"

namespace tpsim::cli {

namespace {

// What --base names: its profile, the name the written profile says it came from, and the `base:` key
// that lets the written profile name it.
struct Base {
  std::optional<sim::CostProfile> profile;
  std::string name;  // for people ("the default profile of h100-sxm")
  std::string ref;   // a GPU preset, or the file relative to the output's folder; empty: none
};

// --base: "none", a GPU preset's default profile, a profile file, or (empty) the default profile of the GPU
// the measurements ran on, where it has one.
Base base_profile(const std::string& base, const std::string& measured_on, const std::string& out) {
  if (base == "none") return {};
  const std::string preset = base.empty() ? measured_on : base;
  if (model::find_preset("gpus", preset, "yaml")) {
    std::optional<sim::CostProfile> profile = sim::default_profile(preset);
    if (!profile && base.empty()) return {};
    if (!profile) throw InputError("--base " + base + ": " + sim::no_default_profile_message(base));
    return {profile, "the default profile of " + preset, preset};
  }
  // A shipped preset's file (scenarios/presets/profiles/h100-sxm.yaml) is named as that preset.
  const std::filesystem::path path(base);
  if (path.parent_path().generic_string().ends_with("presets/profiles") &&
      model::find_preset("profiles", path.stem().string(), "yaml")) {
    return {sim::load_profile_file(base), base, path.stem().string()};
  }
  const std::filesystem::path out_dir =
      out == "-" ? std::filesystem::current_path() : std::filesystem::absolute(out).parent_path();
  return {sim::load_profile_file(base), base,
          std::filesystem::relative(std::filesystem::absolute(base), out_dir).generic_string()};
}

}  // namespace

int calibrate_fit(const CalibrateOptions& options) {
  std::vector<calibrate::TraceReading> traces;
  const std::vector<calibrate::Measurement> all = read_all(options.files, options.measured_on, &traces);
  report_traces(traces, all, std::cerr);
  const std::string measured_on = options.measured_on.empty() ? measured_gpu(all) : options.measured_on;
  const sim::GpuSpec gpu = gpu_preset(measured_on, "--measured-on");
  const std::string target = options.gpu.empty() ? measured_on : options.gpu;
  const sim::GpuSpec target_gpu = gpu_preset(target, "--gpu");
  const Base base = base_profile(options.base, measured_on, options.out);
  calibrate::ProfileFit fit = calibrate::fit_profile(all, gpu, base.profile ? &*base.profile : nullptr, base.name);
  if (!base.profile && !fit.not_fitted.empty()) {
    std::string missing;
    for (const std::string& name : fit.not_fitted) missing += (missing.empty() ? "" : ", ") + name;
    throw InputError("these measurements fit no " + missing + " section, and no base profile gives one (" +
                     measured_on + " has no default profile" + (options.base == "none" ? ", and --base none" : "") +
                     "): name one with --base (a GPU preset, e.g. h100-sxm, or a profile file)");
  }
  fit.base_ref = base.ref;
  calibrate::transfer_profile(fit, gpu, target_gpu);
  // Decode runs of the target GPU fit its memory-bound regime over whatever the other points gave.
  std::vector<const calibrate::Measurement*> decodes;
  for (const calibrate::Measurement& m : all) {
    if (m.kind != "decode" || !m.correct) continue;
    if (m.gpu == target) {
      decodes.push_back(&m);
    } else {
      ++fit.other_gpu_points;
    }
  }
  if (!decodes.empty()) calibrate::fit_decode(decodes, fit);
  std::vector<std::string> names;
  for (const std::string& file : options.files) names.push_back(file);
  write_output(options.out, calibrate::profile_yaml(fit, target, names));
  if (fit.other_gpu_points > 0) {
    std::cerr << "calibrate: " << fit.other_gpu_points << " points of other GPUs than " << gpu.name
              << " fit nothing here (only multi-node points fit the network section whatever their GPU)\n";
  }
  for (const std::string& name : fit.not_fitted) {
    std::cerr << "calibrate: no measurements for " << name << ": its values from " << base.name
              << " stay (the profile says so)\n";
  }
  for (const std::string& refusal : fit.refused) std::cerr << "calibrate: " << refusal << "\n";
  // What else nccl-tests would fit, said where collectives were given.
  const bool collectives =
      std::any_of(all.begin(), all.end(), [](const calibrate::Measurement& m) { return m.kind == "collective"; });
  if (collectives) {
    for (const std::string& run : calibrate::nccl_tests_still_needed(fit)) {
      std::cerr << "calibrate: still to measure: " << run << "\n";
    }
  }
  return 0;
}

int calibrate_convert(const std::string& data_dir, const std::string& out_dir) {
  const auto converted = calibrate::convert_public_tables(data_dir);
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) throw InputError(out_dir + ": cannot create the folder: " + error.message());
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [name, measurements] : converted) {
    files.emplace_back(out_dir + "/" + name, calibrate::to_jsonl(measurements));
  }
  write_outputs(files);
  for (const auto& [name, measurements] : converted) {
    std::cerr << "calibrate: " << measurements.size() << " measurements -> " << out_dir << "/" << name << "\n";
  }
  return 0;
}

int calibrate_report(const CalibrateOptions& options) {
  std::vector<calibrate::TraceReading> traces;
  std::vector<calibrate::Measurement> all = read_all(options.files, options.measured_on, &traces);
  report_traces(traces, all, std::cout);
  std::vector<bool> validation_only(all.size(), false);
  const std::vector<calibrate::Measurement> extra = read_all(options.validation_only, options.measured_on);
  all.insert(all.end(), extra.begin(), extra.end());
  validation_only.resize(all.size(), true);
  const std::string measured_on = options.measured_on.empty() ? measured_gpu(all) : options.measured_on;
  const Base base = base_profile(options.base, measured_on, "-");
  std::cout << calibrate::validation_report(
      all, validation_only, gpu_preset(measured_on, "--measured-on"),
      [](const std::string& name) { return gpu_preset(name, "measurement gpu"); },
      base.profile ? &*base.profile : nullptr);
  return 0;
}

}  // namespace tpsim::cli
