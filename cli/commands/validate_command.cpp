// Chooses the profile (given, default, or fitted on the held-out split), predicts every composite
// point and prints the table and the summary (and JSON).
#include "cli/commands/validate_command.hpp"

#include <iostream>

#include "base/input_error.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/validation/composite_validation.hpp"
#include "cli/commands/measurement_files.hpp"
#include "cli/output_file.hpp"

namespace tpsim::cli {
namespace {

sim::CostProfile choose_profile(const ValidateOptions& o, const std::vector<calibrate::Measurement>& all,
                                calibrate::Holdout holdout, std::string* described) {
  if (holdout != calibrate::Holdout::kNone) {
    const std::vector<calibrate::Measurement> fit_on = calibrate::fit_set(all, holdout);
    if (fit_on.empty())
      throw InputError("--holdout " + o.holdout + ": no single-op points (gemm, collective, memcpy) to fit");
    const std::string gpu = o.measured_on.empty() ? measured_gpu(fit_on) : o.measured_on;
    *described = "fitted on " + std::to_string(fit_on.size()) + " single-op points (" + o.holdout + " holdout)";
    return calibrate::fit_profile(fit_on, gpu_preset(gpu, "--measured-on")).profile;
  }
  if (o.profile != "default") {
    *described = o.profile;
    return sim::load_profile_file(o.profile);
  }
  const std::string gpu = o.measured_on.empty() ? measured_gpu(all) : o.measured_on;
  const auto profile = sim::default_profile(gpu);
  if (!profile) throw InputError(sim::no_default_profile_message(gpu));
  *described = "the default profile of " + gpu;
  return *profile;
}

}  // namespace

int run_validate(const ValidateOptions& o) {
  const std::vector<calibrate::Measurement> all = read_all(o.files, o.measured_on);
  const calibrate::Holdout holdout = calibrate::parse_holdout(o.holdout);
  std::string described;
  const sim::CostProfile profile = choose_profile(o, all, holdout, &described);
  const sim::EngineOptions options = calibrate::composite_engine_options(profile);
  const calibrate::CompositeValidation v = calibrate::validate_composites(
      all, [&](const std::string& gpu) { return sim::CostModel(gpu_preset(gpu, "measurement gpu"), profile); },
      options);
  if (v.rows.empty() && v.skipped.empty()) {
    throw InputError(
        "no composite measurements (overlap, async_tp, dtp) in the files: tpsim-real overlap, async-tp "
        "and dtp write them");
  }
  if (!o.json_out.empty()) {
    nlohmann::ordered_json j = calibrate::composite_json(v);
    j["profile"] = described;
    write_output(o.json_out, j.dump(2) + "\n");
  }
  if (o.json_out != "-") std::cout << "profile: " << described << "\n\n" << calibrate::composite_table(v);
  return 0;
}

}  // namespace tpsim::cli
