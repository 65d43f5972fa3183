// Reads measurement files, resolves the GPU presets they refer to, and writes profiles or reports.
#include "cli/calibrate_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "calibrate/nccl_tests_log.hpp"
#include "calibrate/profile_fit.hpp"
#include "calibrate/public_convert.hpp"
#include "calibrate/public_report.hpp"
#include "cli/output_file.hpp"
#include "model/input_error.hpp"
#include "model/presets.hpp"
#include "model/yaml_reader.hpp"

namespace tpsim::cli {
namespace {

sim::GpuSpec gpu_preset(const std::string& name, const std::string& what) {
  const auto text = model::find_preset("gpus", name, "yaml");
  if (!text) {
    throw InputError(what + " '" + name +
                     "': unknown GPU preset; valid: " + model::join_names(model::preset_names("gpus")));
  }
  const model::YamlReader reader("presets/gpus/" + name + ".yaml");
  return sim::read_gpu_spec(reader, reader.parse_text(std::string(*text)));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Measurement files, or nccl-tests logs (recognised by their header) attributed to `log_gpu`.
std::vector<calibrate::Measurement> read_all(const std::vector<std::string>& files, const std::string& log_gpu) {
  std::vector<calibrate::Measurement> all;
  for (const std::string& file : files) {
    const std::string text = read_text(file);
    std::vector<calibrate::Measurement> some;
    if (calibrate::looks_like_nccl_tests_log(text)) {
      if (log_gpu.empty()) {
        throw InputError(file + ": an nccl-tests log names no tpsim GPU preset: pass --measured-on (e.g. h100-sxm)");
      }
      some = calibrate::parse_nccl_tests_log(text, file, log_gpu);
    } else {
      some = calibrate::read_measurements(file);
    }
    all.insert(all.end(), some.begin(), some.end());
  }
  return all;
}

// The GEMM points' GPU if any (fractions of peak FLOP/s and HBM are relative to it), else the most
// common GPU among the measurements.
std::string measured_gpu(const std::vector<calibrate::Measurement>& all) {
  std::map<std::string, size_t> count;
  for (const auto& m : all) {
    if (m.kind == "gemm") return m.gpu;
    ++count[m.gpu];
  }
  return std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
}

}  // namespace

int calibrate_fit(const CalibrateOptions& options) {
  const std::vector<calibrate::Measurement> all = read_all(options.files, options.measured_on);
  const std::string measured_on = options.measured_on.empty() ? measured_gpu(all) : options.measured_on;
  const sim::GpuSpec gpu = gpu_preset(measured_on, "--measured-on");
  const std::string target = options.gpu.empty() ? measured_on : options.gpu;
  gpu_preset(target, "--gpu");  // must exist
  const calibrate::ProfileFit fit = calibrate::fit_profile(all, gpu);
  std::vector<std::string> names;
  for (const std::string& file : options.files) names.push_back(file);
  write_output(options.out, calibrate::profile_yaml(fit, target, names));
  for (const std::string& name : fit.not_fitted) {
    std::cerr << "calibrate: no measurements for " << name << ": its default values stay (say so in the profile)\n";
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
  std::cout << calibrate::validation_report(
      all, validation_only, gpu_preset(measured_on, "--measured-on"),
      [](const std::string& name) { return gpu_preset(name, "measurement gpu"); });
  return 0;
}

}  // namespace tpsim::cli
