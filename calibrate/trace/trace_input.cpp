// Reading a trace for calibrate: GPU attribution, points and analysis.
#include "calibrate/trace/trace_input.hpp"

#include "base/device_names.hpp"
#include "base/input_error.hpp"
#include "calibrate/trace/trace_points.hpp"

namespace tpsim::calibrate {

std::vector<Measurement> trace_measurements(const std::string& bytes, const std::string& path, const std::string& gpu,
                                            const std::function<sim::GpuSpec(const std::string&)>& gpu_spec,
                                            TraceReading* reading) {
  const KinetoTrace trace = parse_kineto_trace(bytes, path);
  std::string preset = gpu;
  if (preset.empty() && !trace.device_name.empty()) preset = gpu_preset_of_device(trace.device_name).value_or("");
  if (preset.empty()) {
    throw InputError(echo_path(path) + ": " +
                     (trace.device_name.empty()
                          ? std::string("the trace names no device (no deviceProperties)")
                          : "no GPU preset describes its device '" + echo_value(trace.device_name, 60) + "'") +
                     ": give the GPU it ran on with --measured-on (a GPU preset, e.g. h100-sxm)");
  }
  TraceReading r;
  r.path = path;
  r.gpu = preset;
  std::vector<Measurement> points = trace_points(trace, preset, r.not_fitted);
  r.points = points.size();
  r.analysis = analyse_trace(trace, gpu_spec(preset));
  if (reading) *reading = std::move(r);
  return points;
}

}  // namespace tpsim::calibrate
