// Builds trace events from timelines: complete events ("X") with op details in args.
#include "sim/trace_export.hpp"

#include <nlohmann/json.hpp>

namespace tpsim::sim {
namespace {

using Json = nlohmann::ordered_json;

Json op_args(const model::Op& op) {
  Json args;
  args["kind"] = model::to_string(op.kind);
  args["shape"] = op.shape;
  if (model::is_kernel(op.kind)) {
    args["flops"] = op.flops;
    args["bytes_read"] = op.bytes_read;
    args["bytes_written"] = op.bytes_written;
  } else if (op.kind == model::OpKind::kCollective) {
    args["collective"] = model::to_string(op.collective);
    args["tensor_bytes"] = op.tensor_bytes;
    args["group_size"] = op.group_size;
    args["algorithm"] = "ring";
  } else {
    args["send_to"] = "rank" + std::string(op.send_offset >= 0 ? "+" : "") + std::to_string(op.send_offset);
    args["recv_from"] = "rank" + std::string(op.recv_offset >= 0 ? "+" : "") + std::to_string(op.recv_offset);
    args["message_bytes"] = op.message_bytes;
    args["transport"] = model::to_string(op.transport);
  }
  return args;
}

Json metadata(const char* name, int pid, int tid, const std::string& value) {
  Json event;
  event["name"] = name;
  event["ph"] = "M";
  event["pid"] = pid;
  event["tid"] = tid;
  event["args"]["name"] = value;
  return event;
}

}  // namespace

std::string chrome_trace_json(const ScenarioRun& run) {
  Json events = Json::array();
  for (size_t v = 0; v < run.variants.size(); ++v) {
    const VariantRun& variant = run.variants[v];
    const int ranks = variant.timeline.ranks;
    for (int r = 0; r < ranks; ++r) {
      const int pid = static_cast<int>(v) * 1000 + r;
      events.push_back(metadata("process_name", pid, 0, variant.variant.name + " / GPU " + std::to_string(r)));
      Json sort = metadata("process_sort_index", pid, 0, "");
      sort["args"] = {{"sort_index", pid}};
      events.push_back(std::move(sort));
      for (int s = 0; s < model::kStreamCount; ++s) {
        events.push_back(metadata("thread_name", pid, s, model::to_string(static_cast<model::Stream>(s)) + " stream"));
      }
    }
    for (const OpSpan& span : variant.timeline.spans) {
      const model::Op& op = variant.graph.op(span.op);
      Json event;
      event["name"] = op.name;
      event["cat"] = model::to_string(op.kind);
      event["ph"] = "X";
      event["pid"] = static_cast<int>(v) * 1000 + span.rank;
      event["tid"] = static_cast<int>(op.stream);
      event["ts"] = span.start_s * 1e6;
      event["dur"] = (span.end_s - span.start_s) * 1e6;
      event["args"] = op_args(op);
      events.push_back(std::move(event));
    }
  }
  Json trace;
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ns";
  trace["otherData"]["scenario"] = run.scenario.name;
  return trace.dump() + "\n";
}

}  // namespace tpsim::sim
