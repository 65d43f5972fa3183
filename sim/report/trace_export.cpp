// Builds trace events from timelines: complete events ("X") with op details in args, a "modules" thread per GPU whose
// events carry the exposed communication charged to each module, and flow events ("s", "t", "f") between the ranks of
// a collective, the two ends of a send, and the stages of a pipeline.
#include "sim/report/trace_export.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/comm_plan.hpp"
#include "sim/report/pipeline_path.hpp"

namespace tpsim::sim {
namespace {

using Json = nlohmann::ordered_json;
constexpr int kModuleThread = model::kStreamCount;

std::string offset_text(int offset) {
  return "rank" + std::string(offset >= 0 ? "+" : "") + std::to_string(offset);
}

Json op_args(const model::Op& op, const CommPlan& plan) {
  Json args;
  args["kind"] = model::to_string(op.kind);
  args["shape"] = op.shape;
  args["module"] = op.module;
  args["stage"] = model::to_string(op.stage);
  if (model::is_kernel(op.kind)) {
    args["flops"] = op.flops;
    args["bytes_read"] = op.bytes_read;
    args["bytes_written"] = op.bytes_written;
    return args;
  }
  if (op.kind == model::OpKind::kCollective) {
    args["collective"] = model::to_string(op.collective);
    args["tensor_bytes"] = op.tensor_bytes;
    args["group_size"] = op.group_size;
    if (op.group != model::CommGroup::kTensor) args["group"] = model::to_string(op.group);
    args["algorithm"] = model::to_string(plan.algorithm);
    args["ran_as"] = ran_as(plan);
    args["costed_by"] = costed_by(plan);
    if (plan.nccl_choice)
      args["nccl_choice"] = nccl_option_name(plan.nccl_choice->algorithm, plan.nccl_choice->protocol);
    if (!plan.deviation.empty()) args["deviation"] = plan.deviation;
    args["steps"] = plan.steps;
  } else {
    args["send_to"] = offset_text(op.send_offset);
    args["recv_from"] = offset_text(op.recv_offset);
    args["message_bytes"] = op.message_bytes;
    args["transport"] = model::to_string(op.transport);
  }
  return args;
}

Json metadata(const char* name, int pid, int tid, const Json& args) {
  Json event;
  event["name"] = name;
  event["ph"] = "M";
  event["pid"] = pid;
  event["tid"] = tid;
  event["args"] = args;
  return event;
}

Json complete(const std::string& name, const std::string& category, int pid, int tid, double start_s, double end_s,
              Json args) {
  Json event;
  event["name"] = name;
  event["cat"] = category;
  event["ph"] = "X";
  event["pid"] = pid;
  event["tid"] = tid;
  event["ts"] = start_s * 1e6;
  event["dur"] = (end_s - start_s) * 1e6;
  event["args"] = std::move(args);
  return event;
}

// The next flow id: one per arrow chain, unique in the trace.
class FlowIds {
 public:
  int next() { return ++last_; }

 private:
  int last_ = 0;
};

// A slice a flow event binds to: its process, thread and span (the event sits at its middle, inside it).
struct FlowEnd {
  int pid = 0;
  int tid = 0;
  double start_s = 0;
  double end_s = 0;
};

// Arrows through `ends` in order: a flow start, steps, and a finish bound to the enclosing slice.
void add_flow(Json& events, const std::string& name, int id, const std::vector<FlowEnd>& ends) {
  if (ends.size() < 2) return;
  for (size_t i = 0; i < ends.size(); ++i) {
    Json event;
    event["name"] = name;
    event["cat"] = "flow";
    event["ph"] = i == 0 ? "s" : i + 1 == ends.size() ? "f" : "t";
    event["id"] = id;
    event["pid"] = ends[i].pid;
    event["tid"] = ends[i].tid;
    event["ts"] = (ends[i].start_s + ends[i].end_s) / 2 * 1e6;
    if (i + 1 == ends.size()) event["bp"] = "e";
    events.push_back(std::move(event));
  }
}

// Flows between the written GPUs of a pass: each TP collective's ranks in rank order, and each send step from the
// GPU that sends to the one that receives (both of one TP group).
void add_pass_flows(Json& events, const PassTrace& pass, int pid_base, int shown, FlowIds& ids) {
  const Timeline& t = pass.timeline;
  const model::LayerGraph& graph = pass.graph;
  const int ranks = t.ranks, tp = graph.tp();
  if (shown < 2 || tp < 2 || t.spans.size() != graph.size() * static_cast<size_t>(ranks)) return;
  const auto end_of = [&](model::OpId op, int rank) {
    const OpSpan& span = t.spans[static_cast<size_t>(op) * ranks + rank];  // ordered by (op, rank)
    return FlowEnd{pid_base + rank, static_cast<int>(graph.op(op).stream), span.start_s, span.end_s};
  };
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (op.kind == model::OpKind::kCollective && op.group == model::CommGroup::kTensor) {
      for (int base = 0; base + tp <= shown; base += tp) {
        std::vector<FlowEnd> ends;
        for (int r = base; r < base + tp; ++r) ends.push_back(end_of(id, r));
        add_flow(events, op.name, ids.next(), ends);
      }
    } else if (op.kind == model::OpKind::kExchange && op.send_offset != 0) {
      for (int r = 0; r < shown; ++r) {
        const int base = r / tp * tp, to = base + ((r % tp + op.send_offset) % tp + tp) % tp;
        if (to < shown && to != r) add_flow(events, op.name, ids.next(), {end_of(id, r), end_of(id, to)});
      }
    }
  }
}

void add_pass(Json& events, const std::string& variant, const PassTrace& pass, int pid_base, int shown) {
  std::array<bool, model::kStreamCount> used{};  // a track per stream the pass uses
  used[static_cast<int>(model::Stream::kCompute)] = true;
  for (const OpSpan& span : pass.timeline.spans) used[static_cast<int>(pass.graph.op(span.op).stream)] = true;
  for (int r = 0; r < shown; ++r) {
    const int pid = pid_base + r;
    events.push_back(
        metadata("process_name", pid, 0, {{"name", variant + " / " + pass.label + " / GPU " + std::to_string(r)}}));
    events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
    for (int s = 0; s < model::kStreamCount; ++s) {
      if (!used[s]) continue;
      events.push_back(
          metadata("thread_name", pid, s, {{"name", model::to_string(static_cast<model::Stream>(s)) + " stream"}}));
    }
    events.push_back(metadata("thread_name", pid, kModuleThread, {{"name", "modules"}}));
  }
  for (const OpSpan& span : pass.timeline.spans) {
    if (span.rank >= shown) continue;
    const model::Op& op = pass.graph.op(span.op);
    events.push_back(complete(op.name, model::to_string(op.kind), pid_base + span.rank, static_cast<int>(op.stream),
                              span.start_s, span.end_s,
                              op_args(op, pass.timeline.plans ? (*pass.timeline.plans)[span.op] : CommPlan{})));
  }
  for (const ModuleSpan& m : module_exposure(pass.graph, pass.timeline)) {
    if (m.rank >= shown) continue;
    const std::string name = m.module < 0 ? "final" : "module " + std::to_string(m.module);
    events.push_back(complete(name, "module", pid_base + m.rank, kModuleThread, m.start_s, m.end_s,
                              {{"exposed_comm_us", m.exposed_comm_s * 1e6}}));
  }
}

std::string pass_name(const model::PipelineStep& step) {
  const char* kind = step.pass == model::PipelinePass::kForward    ? "F"
                     : step.pass == model::PipelinePass::kBackward ? "B"
                                                                   : "W";
  return std::string(kind) + std::to_string(step.microbatch) +
         (step.virtual_stage > 0 ? "." + std::to_string(step.virtual_stage) : "");
}

// One process for the variant's pipeline: a thread per stage with its passes (F3: micro-batch 3's forward;
// F3.1 through the stage's second chunk; W: a split-off weight gradient) and its optimizer.
void add_pipeline(Json& events, const std::string& variant, const PipelineRun& pipeline, int pid, FlowIds& ids) {
  events.push_back(metadata("process_name", pid, 0,
                            {{"name", variant + " / pipeline (" + model::to_string(pipeline.spec.schedule) + ")"}}));
  events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
  for (size_t stage = 0; stage < pipeline.spans.size(); ++stage) {
    const int tid = static_cast<int>(stage);
    events.push_back(metadata("thread_name", pid, tid, {{"name", "stage " + std::to_string(stage)}}));
    double last = 0;
    for (const model::PipelineSpan& span : pipeline.spans[stage]) {
      events.push_back(complete(pass_name(span.step), "pipeline", pid, tid, span.start_s, span.end_s,
                                {{"microbatch", span.step.microbatch}, {"virtual_stage", span.step.virtual_stage}}));
      last = std::max(last, span.end_s);
    }
    const StageRun& r = pipeline.stages[stage];
    if (r.optimizer_s > 0) events.push_back(complete("optimizer", "pipeline", pid, tid, last, r.end_s, Json::object()));
  }
  // An arrow from each pass to the pass of another stage that reads its output (an activation, or its gradient).
  const std::vector<std::vector<std::optional<PassInput>>> inputs = pipeline_inputs(pipeline);
  for (size_t stage = 0; stage < inputs.size(); ++stage) {
    for (size_t i = 0; i < inputs[stage].size(); ++i) {
      const std::optional<PassInput>& in = inputs[stage][i];
      if (!in || in->from.stage == static_cast<int>(stage)) continue;
      const model::PipelineSpan& from = pipeline.spans[static_cast<size_t>(in->from.stage)][in->from.index];
      const model::PipelineSpan& to = pipeline.spans[stage][i];
      add_flow(events, "send " + pass_name(from.step), ids.next(),
               {{pid, in->from.stage, from.start_s, from.end_s}, {pid, static_cast<int>(stage), to.start_s, to.end_s}});
    }
  }
}

}  // namespace

std::string chrome_trace_json(const ScenarioRun& run, const TraceOptions& options) {
  // Process ids: a block of hundreds per pass that holds its GPUs, and a block of thousands per variant that holds
  // its passes and, last, its pipeline's track (100 and 1000 while passes have at most 100 GPUs and variants at most 9
  // passes).
  size_t gpus = 1, passes = 1;
  for (const VariantRun& variant : run.variants) {
    passes = std::max(passes, variant.passes.size());
    for (const PassTrace& pass : variant.passes) gpus = std::max(gpus, static_cast<size_t>(pass.timeline.ranks));
  }
  const size_t pass_block = 100 * ((gpus + 99) / 100);
  const size_t variant_block = 1000 * ((passes * pass_block + 1 + 999) / 1000);
  Json events = Json::array();
  FlowIds ids;
  int written = 0;
  for (size_t v = 0; v < run.variants.size(); ++v) {
    const VariantRun& variant = run.variants[v];
    for (size_t p = 0; p < variant.passes.size(); ++p) {
      const PassTrace& pass = variant.passes[p];
      const int pid_base = static_cast<int>(v * variant_block + p * pass_block);
      const int shown = options.ranks > 0 ? std::min(options.ranks, pass.timeline.ranks) : pass.timeline.ranks;
      written = std::max(written, shown);
      add_pass(events, variant.variant.name, pass, pid_base, shown);
      add_pass_flows(events, pass, pid_base, shown, ids);
    }
    if (variant.pipeline) {
      add_pipeline(events, variant.variant.name, *variant.pipeline, static_cast<int>((v + 1) * variant_block - 1), ids);
    }
  }
  Json trace;
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ns";
  trace["otherData"]["scenario"] = run.scenario.name;
  trace["otherData"]["gpus_written"] =
      options.ranks == 0 ? std::string("every GPU of each pass")
                         : (written == 1 ? std::string("GPU 0") : "GPUs 0 to " + std::to_string(written - 1)) +
                               " of each pass (tpsim run --trace-ranks all: every GPU)";
  return trace.dump() + "\n";
}

}  // namespace tpsim::sim
