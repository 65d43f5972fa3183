// A training or inference scenario's memory per GPU in closed form, before anything is simulated: the same
// footprint `tpsim run` reports (the whole model's tensors, the runtime's parts for the GPU; under a pipeline the
// stage that needs the most), so that a planner can refuse a layout that cannot fit without simulating it.
#pragma once

#include "model/memory/memory_footprint.hpp"
#include "model/scenario.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::sim {

// Of the scenario's variant `variant`. zb-v's order depends on its simulated pass times; it is estimated here with
// every pass one unit long (the schedule's design case), so its held micro-batches may differ from the run's.
model::MemoryFootprint estimate_memory(const model::Scenario& scenario, const model::Variant& variant,
                                       const GpuSpec& gpu);

}  // namespace tpsim::sim
