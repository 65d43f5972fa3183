// Names of variant enums and the rule for valid chunk counts.
#include "model/graph/variant.hpp"

namespace tpsim::model {

std::string to_string(TpMode mode) {
  switch (mode) {
    case TpMode::kTp:
      return "tp";
    case TpMode::kSp:
      return "sp";
    case TpMode::kDtp:
      return "dtp";
    case TpMode::kAsync:
      return "async";
    case TpMode::kNoComm:
      return "nocomm";
  }
  return "tp";
}

std::string to_string(Transport transport) {
  return transport == Transport::kSm ? "sm" : "copy_engine";
}

std::string to_string(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kNccl:
      return "nccl";
    case CollectiveAlgorithm::kAuto:
      return "auto";
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kDirect:
      return "one_shot";
    case CollectiveAlgorithm::kNvls:
      return "nvls";
    case CollectiveAlgorithm::kTwoShot:
      return "two_shot";
    case CollectiveAlgorithm::kTree:
      return "tree";
    case CollectiveAlgorithm::kMultimem:
      return "multimem";
    case CollectiveAlgorithm::kPointToPoint:
      return "point_to_point";
    case CollectiveAlgorithm::kDeepEp:
      return "deepep";
    case CollectiveAlgorithm::kDeepEpLowLatencyDispatch:
      return "deepep_ll_dispatch";
    case CollectiveAlgorithm::kDeepEpLowLatencyCombine:
      return "deepep_ll_combine";
  }
  return "auto";
}

const std::vector<std::string>& collective_algorithm_names() {
  static const std::vector<std::string> names = {"nccl",     "auto", "ring", "one_shot",
                                                 "two_shot", "nvls", "tree", "multimem"};
  return names;
}

std::optional<CollectiveAlgorithm> collective_algorithm_named(const std::string& name) {
  // The spellings without an underscore, as `tpsim predict --algorithm oneshot|twoshot` takes them.
  if (name == "oneshot") return CollectiveAlgorithm::kDirect;
  if (name == "twoshot") return CollectiveAlgorithm::kTwoShot;
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::kNccl, CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing,
                                CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kTwoShot, CollectiveAlgorithm::kNvls,
                                CollectiveAlgorithm::kTree, CollectiveAlgorithm::kMultimem}) {
    if (to_string(a) == name) return a;
  }
  return std::nullopt;
}

std::string to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::kAuto:
      return "auto";
    case Protocol::kSimple:
      return "simple";
    case Protocol::kLL:
      return "ll";
    case Protocol::kLL128:
      return "ll128";
    case Protocol::kLowLatency:
      return "low_latency";
  }
  return "auto";
}

const std::vector<std::string>& protocol_names() {
  static const std::vector<std::string> names = {"auto", "simple", "ll", "ll128"};
  return names;
}

std::optional<Protocol> protocol_named(const std::string& name) {
  for (Protocol p : {Protocol::kAuto, Protocol::kSimple, Protocol::kLL, Protocol::kLL128}) {
    if (to_string(p) == name) return p;
  }
  return std::nullopt;
}

std::string to_string(ChunkOrder order) {
  return order == ChunkOrder::kRing ? "ring" : "direct";
}

std::string check_chunks(int chunks, int tp) {
  if (chunks < 1) return "chunks must be at least 1";
  if (chunks % tp == 0 || tp % chunks == 0) return "";
  return "chunks=" + std::to_string(chunks) + " must divide tp=" + std::to_string(tp) +
         " or be a multiple of it (e.g. 1, 2, 4, " + std::to_string(tp) + ", " + std::to_string(2 * tp) + ")";
}

}  // namespace tpsim::model
