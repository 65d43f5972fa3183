// Single-op predictions: the cost model and profile of a GPU preset, sizes, and a GEMM from the cost
// model directly (collectives: predict_collective.cpp).
#include "cli/commands/predict_command.hpp"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "base/size_checks.hpp"
#include "base/units.hpp"
#include "input/presets.hpp"

namespace tpsim::cli {

sim::CostModel predict_cost_model(const PredictTarget& target) {
  const auto text = model::find_preset("gpus", target.gpu, "yaml");
  if (!text) {
    throw InputError("--gpu " + target.gpu +
                     ": unknown GPU preset; valid: " + model::join_names(model::preset_names("gpus")));
  }
  const model::YamlReader reader("presets/gpus/" + target.gpu + ".yaml");
  const sim::GpuSpec gpu = sim::read_gpu_spec(reader, reader.parse_text(std::string(*text)));
  if (target.calibration != "default") return sim::CostModel(gpu, sim::load_profile_file(target.calibration));
  std::optional<sim::CostProfile> profile = sim::default_profile(gpu.name);
  if (!profile) throw InputError("--gpu " + gpu.name + ": " + sim::no_default_profile_message(gpu.name));
  return sim::CostModel(gpu, *profile);
}

double parse_bytes(const std::string& text) {
  try {
    return model::parse_bytes(text);
  } catch (const InputError& error) {
    throw InputError(std::string("--bytes: ") + error.what());
  }
}

int predict_gemm(const PredictTarget& target, const GemmQuery& q) {
  if (const std::string why = model::gemm_shape_problem(q.m, q.n, q.k); !why.empty()) {
    throw InputError("--m " + std::to_string(q.m) + " --n " + std::to_string(q.n) + " --k " + std::to_string(q.k) +
                     ": " + why);
  }
  if (q.dtype != "bf16" && q.dtype != "fp8") throw InputError("--dtype " + q.dtype + ": valid: bf16, fp8");
  const sim::CostModel cost = predict_cost_model(target);
  const bool fp8 = q.dtype == "fp8";
  if (const std::string why = fp8 ? cost.fp8_unsupported_reason() : ""; !why.empty()) {
    throw InputError("--dtype fp8: " + why);
  }
  const model::GemmShape shape{q.m, q.n, q.k};
  const double bytes = model::gemm_bytes(shape, fp8 ? model::kFp8Bytes : model::kBf16Bytes, model::kBf16Bytes);
  const double seconds = cost.gemm_seconds(shape, bytes, fp8);
  const double flops = model::gemm_flops(shape);
  const sim::GemmTiling tiling = cost.gemm_tiling(shape);
  if (target.json) {
    nlohmann::ordered_json j;
    j["gpu"] = cost.gpu().name;
    j["m"] = q.m;
    j["n"] = q.n;
    j["k"] = q.k;
    j["dtype"] = q.dtype;
    j["time_s"] = seconds;
    j["tflops"] = flops / seconds / 1e12;
    j["tiles"] = tiling.tiles;
    j["split_k"] = tiling.splits;
    j["waves"] = tiling.waves;
    j["wave_efficiency"] = tiling.wave_efficiency;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "gemm M=" << q.m << " N=" << q.n << " K=" << q.k << " " << q.dtype << " on " << cost.gpu().name << ": "
            << model::format_number("%.3f", seconds * 1e6) << " us, "
            << model::format_number("%.1f", flops / seconds / 1e12) << " TFLOP/s (" << tiling.tiles
            << " tiles, split-K " << tiling.splits << ", " << tiling.waves << " waves, "
            << model::format_number("%.0f", tiling.wave_efficiency * 100) << "% wave efficiency)\n";
  return 0;
}

}  // namespace tpsim::cli
