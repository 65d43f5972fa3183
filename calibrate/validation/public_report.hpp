// Predicted against measured for every measurement, with the profile fitted on all of them
// (in-sample) and on the even-numbered points of each fitted group (held out: errors on the rest).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::calibrate {

// One point's prediction in the report, on its system (its GPU, one node or m.nodes ib-rail nodes)
// under `profile`: a GEMM from the cost model, a peer copy from the copy step's closed form as the copy
// fits predict it (copy_seconds), a collective simulated alone as a scenario runs it; `algorithm`, when
// given, receives the algorithm the collective ran.
double predicted_seconds(const Measurement& m, const sim::GpuSpec& gpu, const sim::CostProfile& profile,
                         std::string* algorithm = nullptr);

// Markdown tables: GEMMs, then collectives by GPU and collective, each row with its source line.
// `measured_on` gives the peaks the fractions are relative to; `gpus` resolves each point's GPU.
// Points whose `validation_only` flag is set are never fitted: they are reported as held out, as are
// points no fitter uses (algorithms tpsim does not fit, other systems). Both fits start from `base`
// when given (sections the points do not fit keep its values), else from the built-in defaults.
std::string validation_report(const std::vector<Measurement>& measurements, const std::vector<bool>& validation_only,
                              const sim::GpuSpec& measured_on,
                              const std::function<sim::GpuSpec(const std::string&)>& gpus,
                              const sim::CostProfile* base = nullptr);

}  // namespace tpsim::calibrate
