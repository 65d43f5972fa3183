// Reads measurement files, resolves the GPU presets they refer to, and writes profiles or reports.
#include "cli/commands/calibrate_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "base/input_error.hpp"
#include "calibrate/fits/decode_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/profile/profile_transfer.hpp"
#include "calibrate/sources/public_convert.hpp"
#include "calibrate/validation/public_report.hpp"
#include "cli/arguments.hpp"
#include "cli/commands/measurement_files.hpp"
#include "cli/output_file.hpp"
#include "cli/report/trace_report.hpp"
#include "input/presets.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"

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
  write_output(options.out, sim::profile_yaml(calibrate::profile_record(fit, target, names)));
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

namespace {

void add_calibrate_report(CLI::App& calibrate_app, Commands& commands) {
  auto report = std::make_shared<CalibrateOptions>();
  CLI::App* report_app = calibrate_app.add_subcommand(
      "report", "Predicted against measured for every measurement, in-sample and held out (markdown)");
  report_app->add_option("measurements", report->files, "Measurement JSON-lines files, or nccl-tests logs")
      ->required()
      ->check(CLI::ExistingFile);
  report_app->add_option("--measured-on", report->measured_on, "GPU preset the measurements ran on");
  report_app
      ->add_option("--validate-only", report->validation_only,
                   "Measurement files reported but never fitted (pure validation data)")
      ->check(CLI::ExistingFile);
  report_app->add_option(
      "--base", report->base,
      "Both fits start from this profile file, GPU preset's default profile, or none (as calibrate --base)");
  commands.push_back({report_app, [report] { return calibrate_report(*report); }});
}

}  // namespace

void add_calibrate_command(CLI::App& app, Commands& commands) {
  auto calibrate = std::make_shared<CalibrateOptions>();
  CLI::App* calibrate_app = app.add_subcommand(
      "calibrate", "Fit a cost profile from measurement files (JSON lines from real/ or converted tables)");
  calibrate_app->require_subcommand(0, 1);
  calibrate_app
      ->add_option("measurements", calibrate->files,
                   "Measurement JSON-lines files, or nccl-tests stdout logs (their GPU from their device lines, "
                   "and what NCCL ran from NCCL's tuner where they do not say)")
      ->check(CLI::ExistingFile);
  calibrate_app->add_option("--gpu", calibrate->gpu, "GPU preset the profile is for (default: --measured-on)");
  calibrate_app->add_option("--measured-on", calibrate->measured_on,
                            "GPU preset the measurements ran on (default: the GEMM points' GPU, or the GPU the "
                            "measurements name most)");
  calibrate_app->add_option("-o,--out", calibrate->out, "Output profile YAML, or - for stdout")
      ->capture_default_str()
      ->check(output_file_path());
  calibrate_app->add_option("--base", calibrate->base,
                            "Sections the measurements do not fit come from this profile file, this GPU preset's "
                            "default profile, or none (default: the measured GPU's default profile, where it has one; "
                            "without a base every section must be fitted)");
  auto convert = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* convert_app = calibrate_app->add_subcommand(
      "convert", "Convert the public CSV tables (calibrate/data/public) into measurement files");
  convert_app->add_option("data_dir", convert->first, "Folder of the public CSV tables")
      ->required()
      ->check(CLI::ExistingDirectory);
  convert_app->add_option("-o,--out", convert->second, "Output folder for the JSON-lines files")
      ->required()
      ->check(output_folder_path());
  commands.push_back({convert_app, [convert] { return calibrate_convert(convert->first, convert->second); }});
  add_calibrate_report(*calibrate_app, commands);
  // After its subcommands: calibrate_app->parsed() also holds when one of them ran.
  commands.push_back({calibrate_app, [calibrate] {
                        if (calibrate->files.empty()) {
                          throw InputError(
                              "tpsim calibrate needs measurement files (or the convert / report subcommands)");
                        }
                        return calibrate_fit(*calibrate);
                      }});
}

}  // namespace tpsim::cli
