// Names of variant enums and the rule for valid chunk counts.
#include "model/graph/variant.hpp"

namespace tpsim::model {

std::string to_string(TpMode mode) {
  return std::string(name_of(kTpModeNames, mode));
}

std::string to_string(Transport transport) {
  return std::string(name_of(kTransportNames, transport));
}

std::string to_string(CollectiveAlgorithm algorithm) {
  return std::string(name_of(kCollectiveAlgorithmNames, algorithm));
}

std::optional<CollectiveAlgorithm> collective_algorithm_named(const std::string& name) {
  return value_named(kCollectiveAlgorithmNames, name);
}

std::string to_string(Protocol protocol) {
  return std::string(name_of(kProtocolNames, protocol));
}

std::optional<Protocol> protocol_named(const std::string& name) {
  return value_named(kProtocolNames, name);
}

std::string to_string(ChunkOrder order) {
  return std::string(name_of(kChunkOrderNames, order));
}

std::string check_chunks(int chunks, int tp) {
  if (chunks < 1) return "chunks must be at least 1";
  if (chunks % tp == 0 || tp % chunks == 0) return "";
  return "chunks=" + std::to_string(chunks) + " must divide tp=" + std::to_string(tp) +
         " or be a multiple of it (e.g. 1, 2, 4, " + std::to_string(tp) + ", " + std::to_string(2 * tp) + ")";
}

}  // namespace tpsim::model
