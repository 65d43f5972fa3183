// The chain of a pipeline step's passes that decides its time: from the step's start to the last pass's end, then
// the optimizer to the slowest stage's end; back from that pass through what each pass waited for last (the previous
// pass on its stage, or its input from the neighbouring chunk: the forward before it, the backward after it, with the
// send between stages), then the optimizer. The step's answer before the chunk programs' own critical paths
// (critical_path.hpp), in the same links.
#pragma once

#include <optional>
#include <vector>

#include "sim/report/critical_path.hpp"
#include "sim/run/pipeline_run.hpp"

namespace tpsim::sim {

// A pass of the schedule as it ran: spans[stage][index] of a PipelineRun.
struct PassRef {
  int stage = 0;
  size_t index = 0;
};

// The pass whose output a pass reads (the forward before it on the previous chunk, the backward after it on the next,
// the last chunk's backward its own forward, a weight gradient its input gradient), and the send that brings it from
// another stage (0 on one stage).
struct PassInput {
  PassRef from;
  double send_s = 0;
};

// Per stage, per pass in spans[stage]: its input; none for the first chunk's forwards.
std::vector<std::vector<std::optional<PassInput>>> pipeline_inputs(const PipelineRun& pipeline);

// Links in time order whose durations add up to the step: kinds "forward", "backward", "weight gradient" (zero-bubble
// schedules' split-off pass), "send" (an activation or its gradient between stages), "optimizer" (from the stage's last
// pass to its end: the stages' norms summed, clipping and AdamW, a gradient reduction's tail), and "wait". `rank` is
// the stage; a pass's `op` names it by kind and stage ("backward on stage 3"), so that critical_path_groups counts a
// stage's passes of one kind together.
std::vector<PathLink> pipeline_critical_path(const PipelineRun& pipeline);

}  // namespace tpsim::sim
