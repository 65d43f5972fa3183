// Names and sizes of workload enums.
#include "model/workload.hpp"

namespace tpsim::model {

double dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return 2.0;
  }
  return 2.0;
}

std::string to_string(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return "forward";
    case Phase::kPrefill:
      return "prefill";
  }
  return "forward";
}

std::string to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return "bf16";
  }
  return "bf16";
}

}  // namespace tpsim::model
