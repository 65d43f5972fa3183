// parallelism.order: its names and its reader.
#include "model/parallel/mesh_order.hpp"

#include <yaml-cpp/yaml.h>

#include "input/yaml_reader.hpp"

namespace tpsim::model {
namespace {

const char* const kValidOrders = "valid: [tp, dp, pp] (the default) or [tp, pp, dp]";

}  // namespace

std::string to_string(MeshOrder order) {
  return order == MeshOrder::kTpDpPp ? "tp, dp, pp" : "tp, pp, dp";
}

MeshOrder read_mesh_order(const YamlReader& in, const YAML::Node& node) {
  std::string names;
  if (node.IsSequence() && node.size() == 3) {
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) in.fail(item, std::string("parallelism.order lists dimension names; ") + kValidOrders);
      names += (names.empty() ? "" : ", ") + item.Scalar();
    }
  }
  for (const MeshOrder order : {MeshOrder::kTpDpPp, MeshOrder::kTpPpDp}) {
    if (names == to_string(order)) return order;
  }
  in.fail(node,
          "parallelism.order must name tp, pp and dp once each, innermost first, with tp first (tpsim "
          "simulates a TP group on consecutive GPUs); " +
              std::string(kValidOrders));
}

}  // namespace tpsim::model
