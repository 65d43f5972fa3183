// parallelism.order: its names (its reader: input/section_readers.cpp).
#include "model/parallel/mesh_order.hpp"

namespace tpsim::model {
std::string to_string(MeshOrder order) {
  return std::string(name_of(kMeshOrderNames, order));
}

}  // namespace tpsim::model
