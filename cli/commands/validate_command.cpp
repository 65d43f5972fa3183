// Chooses the profile (given, default, or fitted on the held-out split), predicts every composite
// point and prints the table and the summary (and JSON).
#include "cli/commands/validate_command.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "base/input_error.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/validation/composite_validation.hpp"
#include "cli/arguments.hpp"
#include "cli/commands/measurement_files.hpp"
#include "cli/commands/trace_validate_command.hpp"
#include "cli/output_file.hpp"
#include "input/profile/profile_reader.hpp"

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

void add_validate_command(CLI::App& app, Commands& commands) {
  auto validate = std::make_shared<ValidateOptions>();
  CLI::App* validate_app = app.add_subcommand(
      "validate", "Predicted against measured for composite measurements (overlap, async_tp, dtp from tpsim-real)");
  validate_app->add_option("measurements", validate->files, "Measurement JSON-lines files (and nccl-tests logs)")
      ->check(CLI::ExistingFile);
  auto trace_validate = std::make_shared<TraceValidateOptions>();
  add_trace_validate_options(validate_app, *trace_validate);
  validate_app->add_option("--profile", validate->profile, "Profile YAML, or default (the GPU's default profile)")
      ->capture_default_str();
  validate_app
      ->add_option("--holdout", validate->holdout,
                   "none: use --profile; kind: fit on the files' single-op points, validate the composites; size: "
                   "fit on the smaller half of each single-op group")
      ->capture_default_str();
  validate_app->add_option("--measured-on", validate->measured_on, "GPU preset the measurements ran on");
  validate_app->add_option("--json", validate->json_out, "Also write the results as JSON (- for stdout)")
      ->check(output_file_path());
  commands.push_back({validate_app, [validate, trace_validate] {
                        if (!trace_validate->traces.empty()) return run_trace_validate(*trace_validate);
                        if (validate->files.empty()) {
                          throw InputError(
                              "tpsim validate needs measurement files, or --trace TRACE --scenario S.yaml");
                        }
                        return run_validate(*validate);
                      }});
}

}  // namespace tpsim::cli
