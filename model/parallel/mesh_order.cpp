// parallelism.order: its names (its reader: input/section_readers.cpp).
#include "model/parallel/mesh_order.hpp"

namespace tpsim::model {
std::string to_string(MeshOrder order) {
  return order == MeshOrder::kTpDpPp ? "tp, dp, pp" : "tp, pp, dp";
}

}  // namespace tpsim::model
