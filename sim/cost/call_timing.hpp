// How a collective call is timed, the three ways its users time it: as nccl-tests does (calls launched back to
// back, the loop timed as a whole: the host's launch path shows where it is longer than the device's time), as
// one call through torch.distributed on an idle GPU (its host work, then the device's), or inside a CUDA graph
// (the device's time alone; calls queued ahead of a busy GPU show the same). Measurements say which
// (base/measurement.hpp `timed_as`); `tpsim predict collective --as-called` reports each.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::sim {

enum class CallTiming { kNcclTests, kTorch, kGraph };
// As `--as-called` and a measurement's `timed_as` name them.
inline constexpr EnumName<CallTiming> kCallTimingNames[] = {
    {CallTiming::kNcclTests, "nccl-tests"},
    {CallTiming::kTorch, "torch"},
    {CallTiming::kGraph, "graph"},
};

std::string to_string(CallTiming timing);

// The host's time per call, launched as `timing` launches it: NCCL's launch path (launch.host_us) for nccl-tests,
// that and torch.distributed's own work per NCCL call (launch.collective_host_us) through torch, none in a graph.
double call_host_seconds(CallTiming timing, const CostProfile& profile, bool nccl_call);

// The time of a call whose device time is `device_s`, as `timing` times it: nccl-tests' back-to-back loop, the
// longer of the host's launch path and the device's time; one call through torch, the host's work and then the
// device's; a graph, the device's.
double as_called_seconds(CallTiming timing, double device_s, const CostProfile& profile, bool nccl_call);

}  // namespace tpsim::sim
