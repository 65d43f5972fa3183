// The order in which a job's parallel dimensions fill the topology's GPUs (parallelism.order).
#pragma once

#include <string>

#include "base/enum_names.hpp"

namespace tpsim::model {

// Innermost first; TP is always innermost (one TP group is consecutive GPUs, the group tpsim simulates).
// kTpDpPp: the data-parallel replicas, then the pipeline stages (TorchTitan's and Megatron's default).
// kTpPpDp: the stages inside each replica's span, e.g. a whole pipeline inside one NVLink domain with the
// replicas across domains.
enum class MeshOrder { kTpDpPp, kTpPpDp };
// The dimensions joined innermost first, as parallelism.order lists them.
inline constexpr EnumName<MeshOrder> kMeshOrderNames[] = {
    {MeshOrder::kTpDpPp, "tp, dp, pp"},
    {MeshOrder::kTpPpDp, "tp, pp, dp"},
};

std::string to_string(MeshOrder order);  // "tp, dp, pp"

}  // namespace tpsim::model
