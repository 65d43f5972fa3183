// Builds trace events from timelines: complete events ("X") with op details in args, and a
// "modules" thread per GPU whose events carry the exposed communication charged to each module.
#include "sim/trace_export.hpp"

#include <algorithm>
#include <array>

#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"

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

void add_pass(Json& events, const std::string& variant, const PassTrace& pass, int pid_base) {
  const int ranks = pass.timeline.ranks;
  std::array<bool, model::kStreamCount> used{};  // a track per stream the pass uses
  used[static_cast<int>(model::Stream::kCompute)] = true;
  for (const OpSpan& span : pass.timeline.spans) used[static_cast<int>(pass.graph.op(span.op).stream)] = true;
  for (int r = 0; r < ranks; ++r) {
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
    const model::Op& op = pass.graph.op(span.op);
    events.push_back(complete(op.name, model::to_string(op.kind), pid_base + span.rank, static_cast<int>(op.stream),
                              span.start_s, span.end_s,
                              op_args(op, pass.timeline.plans ? (*pass.timeline.plans)[span.op] : CommPlan{})));
  }
  for (const ModuleSpan& m : module_exposure(pass.graph, pass.timeline)) {
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
void add_pipeline(Json& events, const std::string& variant, const PipelineRun& pipeline, int pid) {
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
}

}  // namespace

std::string chrome_trace_json(const ScenarioRun& run) {
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
  for (size_t v = 0; v < run.variants.size(); ++v) {
    const VariantRun& variant = run.variants[v];
    for (size_t p = 0; p < variant.passes.size(); ++p) {
      add_pass(events, variant.variant.name, variant.passes[p], static_cast<int>(v * variant_block + p * pass_block));
    }
    if (variant.pipeline) {
      add_pipeline(events, variant.variant.name, *variant.pipeline, static_cast<int>((v + 1) * variant_block - 1));
    }
  }
  Json trace;
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ns";
  trace["otherData"]["scenario"] = run.scenario.name;
  return trace.dump() + "\n";
}

}  // namespace tpsim::sim
