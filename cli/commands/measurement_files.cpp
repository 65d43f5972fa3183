// Reading measurement inputs and resolving the GPU presets they name.
#include "cli/commands/measurement_files.hpp"

#include <algorithm>
#include <map>

#include "base/input_error.hpp"
#include "calibrate/sources/nccl_inference.hpp"
#include "calibrate/sources/nccl_tests_log.hpp"
#include "input/gpu_reader.hpp"
#include "input/presets.hpp"
#include "input/yaml_reader.hpp"

namespace tpsim::cli {

sim::GpuSpec gpu_preset(const std::string& name, const std::string& what) {
  const auto text = model::find_preset("gpus", name, "yaml");
  if (!text) {
    throw InputError(what + " '" + name +
                     "': unknown GPU preset; valid: " + model::join_names(model::preset_names("gpus")));
  }
  const model::YamlReader reader("presets/gpus/" + name + ".yaml");
  return sim::read_gpu_spec(reader, reader.parse_text(std::string(*text)));
}

// Measurement files, or nccl-tests logs (recognised by their header) attributed to `log_gpu`, or where it
// is empty to the GPU their device lines name, NCCL's algorithm and protocol inferred where they do not say.
std::vector<calibrate::Measurement> read_all(const std::vector<std::string>& files, const std::string& log_gpu,
                                             std::vector<calibrate::TraceReading>* traces) {
  std::vector<calibrate::Measurement> all;
  for (const std::string& file : files) {
    const std::string text = calibrate::read_measurement_text(file);
    std::vector<calibrate::Measurement> some;
    if (calibrate::looks_like_kineto_trace(text)) {
      calibrate::TraceReading reading;
      some = calibrate::trace_measurements(
          text, file, log_gpu, [](const std::string& gpu) { return gpu_preset(gpu, "--measured-on"); }, &reading);
      if (traces) traces->push_back(std::move(reading));
    } else if (calibrate::looks_like_nccl_tests_log(text)) {
      // The GPU its device lines name (or --measured-on); what NCCL ran where the log does not say.
      some = calibrate::parse_nccl_tests_log(text, file, log_gpu);
      if (!some.empty()) calibrate::infer_nccl_choices(some, gpu_preset(some.front().gpu, file + ": its GPU"));
    } else {
      some = calibrate::parse_measurements(text, file);
    }
    all.insert(all.end(), some.begin(), some.end());
  }
  return all;
}

// The GEMM points' GPU if any (fractions of peak FLOP/s and HBM are relative to it), else the most
// common GPU among the measurements.
std::string measured_gpu(const std::vector<calibrate::Measurement>& all) {
  if (all.empty()) throw InputError("the measurement files hold no measurements");
  std::map<std::string, size_t> count;
  for (const auto& m : all) {
    if (m.kind == "gemm") return m.gpu;
    ++count[m.gpu];
  }
  return std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
}

}  // namespace tpsim::cli
