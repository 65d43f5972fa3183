// Reading and building op lists.
#include "input/op_list.hpp"

#include <map>

#include "base/input_error.hpp"
#include "base/size_checks.hpp"
#include "base/units.hpp"

namespace tpsim::model {
namespace {

const std::vector<std::string> kOpKeys = {"name",       "kind",      "stream",   "m",    "n",         "k",    "bytes",
                                          "collective", "algorithm", "protocol", "peer", "transport", "after"};

double read_bytes(const YamlReader& in, const YAML::Node& node, const std::string& what) {
  if (!node) in.fail(node, what + " needs bytes");
  try {
    return parse_bytes(in.string(node, what));
  } catch (const InputError& error) {
    in.fail(node, what + ": " + error.what());
  }
}

OpSpec read_op(const YamlReader& in, const YAML::Node& node, const std::string& context) {
  in.expect_map(node, context, kOpKeys);
  in.require(node, "name", context);
  in.require(node, "kind", context);
  OpSpec op;
  op.name = in.string(node["name"], context + ".name");
  op.kind = in.choice(node["kind"], context + ".kind", {"gemm", "collective", "p2p", "memcpy", "elementwise"});
  if (op.kind == "gemm") {
    for (const char* key : {"m", "n", "k"}) in.require(node, key, context + " (a gemm)");
    op.m = in.positive_int(node["m"], context + ".m");
    op.n = in.positive_int(node["n"], context + ".n");
    op.k = in.positive_int(node["k"], context + ".k");
    if (const std::string why = gemm_shape_problem(op.m, op.n, op.k); !why.empty()) in.fail(node, context + ": " + why);
  } else {
    in.require(node, "bytes", context);
    op.bytes = read_bytes(in, node["bytes"], context + ".bytes");
  }
  if (op.kind == "collective") {
    in.require(node, "collective", context + " (a collective)");
    op.collective = in.choice_of(node["collective"], context + ".collective", kCollectiveKindNames);
    op.stream = Stream::kComm;
    if (node["algorithm"]) {
      op.algorithm = in.choice_of(node["algorithm"], context + ".algorithm", kCollectiveAlgorithmNames);
    }
    if (node["protocol"]) {
      op.protocol = in.choice_of(node["protocol"], context + ".protocol", kProtocolNames);
    }
  } else {
    for (const char* key : {"algorithm", "protocol"}) {
      if (node[key]) {
        in.fail(node[key], context + "." + key + ": only a collective has one (this is a " + op.kind + ")");
      }
    }
  }
  if (op.kind == "p2p") {
    if (node["peer"]) op.peer = in.count(node["peer"], context + ".peer", kMaxGroupRanks);
    if (node["transport"]) {
      op.transport = in.choice_of(node["transport"], context + ".transport", kTransportNames);
    }
    op.stream = op.transport == Transport::kSm ? Stream::kComm : Stream::kCopy;
  }
  if (op.kind == "memcpy") op.stream = Stream::kCopy;
  if (op.kind == "gemm" && node["stream"] && node["stream"].IsScalar() && node["stream"].Scalar() != "compute") {
    in.fail(node["stream"], context + ".stream: a gemm runs on the compute stream");
  }
  if (node["stream"]) {
    const Stream chosen = in.choice_of(node["stream"], context + ".stream", kStreamNames);
    const bool communication = op.kind == "collective" || op.kind == "p2p";
    if (communication && chosen == Stream::kCompute) {
      in.fail(node["stream"], context + ".stream: a " + op.kind + " runs on the comm or copy stream");
    }
    op.stream = chosen;
  }
  if (const YAML::Node after = node["after"]) {
    if (!after.IsSequence()) in.fail(after, context + ".after must be a list of earlier op names");
    for (const auto& name : after) op.after.push_back(in.string(name, context + ".after"));
  }
  return op;
}

}  // namespace

std::vector<OpSpec> read_op_list(const YamlReader& in, const YAML::Node& ops) {
  if (!ops.IsSequence() || ops.size() == 0) in.fail(ops, "workload.ops must be a non-empty list of ops");
  std::vector<OpSpec> out;
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string context = "workload.ops[" + std::to_string(i) + "]";
    OpSpec op = read_op(in, ops[i], context);
    if (seen.count(op.name)) in.fail(ops[i]["name"], context + ".name '" + op.name + "' is used twice");
    for (size_t a = 0; a < op.after.size(); ++a) {
      if (!seen.count(op.after[a])) {
        in.fail(ops[i]["after"][a], context + ".after: '" + op.after[a] + "' is not an earlier op");
      }
    }
    seen[op.name] = i;
    out.push_back(std::move(op));
  }
  return out;
}

}  // namespace tpsim::model
