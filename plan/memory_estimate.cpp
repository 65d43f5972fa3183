// Closed-form memory per GPU: the footprint count_memory gives a run, from the scenario alone.
#include "plan/memory_estimate.hpp"

#include "model/memory/pipeline_memory.hpp"
#include "model/pipeline/pipeline_schedule.hpp"
#include "sim/cost/runtime_memory.hpp"

namespace tpsim::sim {

model::MemoryFootprint estimate_memory(const model::Scenario& s, const model::Variant& variant, const GpuSpec& gpu) {
  const int pp = s.parallelism.pp, tp = s.parallelism.tp;
  if (pp <= 1) {
    model::MemoryFootprint m =
        model::memory_footprint(s.arch, model::whole_model_workload(s.arch, s.workload), variant, tp);
    add_runtime_memory(m, gpu.runtime_memory, communicators(s, 0));
    return m;
  }
  const model::PipelineSchedule schedule = model::make_pipeline_schedule(
      s.pipeline.schedule, pp, static_cast<int>(s.workload.microbatches), s.pipeline.virtual_stages);
  std::vector<model::MemoryFootprint> stages =
      model::pipeline_stage_memory(s.arch, s.workload, s.pipeline, schedule, variant, tp);
  model::MemoryFootprint most;
  for (size_t i = 0; i < stages.size(); ++i) {
    add_runtime_memory(stages[i], gpu.runtime_memory, communicators(s, static_cast<int>(i)));
    if (i == 0 || stages[i].device_bytes() > most.device_bytes()) most = stages[i];
  }
  return most;
}

}  // namespace tpsim::sim
