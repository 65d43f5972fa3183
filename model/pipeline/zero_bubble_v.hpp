// ZB-V (Qi et al., "Zero Bubble (Almost) Pipeline Parallelism", ICLR'24, Section 6): two model chunks per stage
// placed in a V, stage s holding chunks s and 2p - 1 - s, so a micro-batch's forward runs down the stages and
// back up to the loss on stage 0, and each backward split into its input gradient and its weight gradient, with
// the activation memory of 1F1B. Pure host logic.
#pragma once

#include <string>
#include <vector>

#include "model/pipeline/pipeline_schedule.hpp"

namespace tpsim::model {

// Per stage, its passes in issue order (virtual stage 0: chunk s, 1: chunk 2p - 1 - s): a greedy list schedule
// run with `costs` (2p chunks' pass times and the hops between them; zero_bubble_v.cpp). Throws std::logic_error
// if it cannot finish.
std::vector<std::vector<PipelineStep>> zero_bubble_v_steps(int stages, int microbatches, const PipelineCosts& costs);

}  // namespace tpsim::model
