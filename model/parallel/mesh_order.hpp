// The order in which a job's parallel dimensions fill the topology's GPUs (parallelism.order).
#pragma once

#include <string>

namespace tpsim::model {

// Innermost first; TP is always innermost (one TP group is consecutive GPUs, the group tpsim simulates).
// kTpDpPp: the data-parallel replicas, then the pipeline stages (TorchTitan's and Megatron's default).
// kTpPpDp: the stages inside each replica's span, e.g. a whole pipeline inside one NVLink domain with the
// replicas across domains.
enum class MeshOrder { kTpDpPp, kTpPpDp };

std::string to_string(MeshOrder order);  // "tp, dp, pp"

}  // namespace tpsim::model
