// The three ways a collective call is timed, and its time under each.
#include "sim/cost/call_timing.hpp"

#include <algorithm>

namespace tpsim::sim {

std::string to_string(CallTiming timing) {
  return std::string(name_of(kCallTimingNames, timing));
}

double call_host_seconds(CallTiming timing, const CostProfile& profile, bool nccl_call) {
  switch (timing) {
    case CallTiming::kNcclTests:
      return profile.host_launch_s;
    case CallTiming::kTorch:
      return profile.host_launch_s + (nccl_call ? profile.collective_host_s : 0.0);
    case CallTiming::kGraph:
      return 0.0;
  }
  return 0.0;
}

double as_called_seconds(CallTiming timing, double device_s, const CostProfile& profile, bool nccl_call) {
  const double host_s = call_host_seconds(timing, profile, nccl_call);
  return timing == CallTiming::kTorch ? host_s + device_s : std::max(host_s, device_s);
}

}  // namespace tpsim::sim
