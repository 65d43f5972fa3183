// Reading Kineto's Chrome-trace JSON and joining GPU activities to the CPU ops that launched them.
#include "calibrate/trace/kineto_trace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/json_parse.hpp"
#include "base/limits.hpp"
#include "calibrate/trace/gzip_text.hpp"

namespace tpsim::calibrate {

namespace {

using Json = nlohmann::json;

// Locates errors in one event: "path: traceEvents[i] (name): ".
struct Where {
  const std::string& path;
  size_t index;
  std::string name;
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(echo_path(path) + ": traceEvents[" + std::to_string(index) + "]" +
                     (name.empty() ? "" : " (" + echo_value(name, 60) + ")") + ": " + what);
  }
};

double number(const Json& e, const char* key, const Where& at, bool non_negative) {
  const auto it = e.find(key);
  if (it == e.end()) at.fail(std::string("no '") + key + "'; a complete event (ph X) has ts and dur in microseconds");
  if (!it->is_number()) at.fail(std::string("'") + key + "' is " + it->type_name() + "; it must be a number");
  const double v = it->get<double>();
  if (!std::isfinite(v) || (non_negative && v < 0)) {
    at.fail(std::string("'") + key + "' is " + echo_value(it->dump(), 30) + "; it must be a finite number" +
            (non_negative ? " >= 0" : ""));
  }
  return v;
}

int64_t integer(const Json& args, const char* key, const Where& at, int64_t absent) {
  const auto it = args.find(key);
  if (it == args.end() || it->is_null()) return absent;
  if (!it->is_number_integer()) {
    // Some writers store ids and counts as floats holding integers.
    if (it->is_number_float() && std::isfinite(it->get<double>()) && std::fabs(it->get<double>()) < 9e15 &&
        std::floor(it->get<double>()) == it->get<double>()) {
      return static_cast<int64_t>(it->get<double>());
    }
    at.fail(std::string("args '") + key + "' is " + echo_value(it->dump(), 30) + "; it must be an integer");
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX) {
    at.fail(std::string("args '") + key + "' is " + it->dump() + ", past the largest integer tpsim reads");
  }
  return it->get<int64_t>();
}

std::string text(const Json& args, const char* key, const Where& at) {
  const auto it = args.find(key);
  if (it == args.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  at.fail(std::string("args '") + key + "' is " + it->type_name() + "; it must be a string");
}

// Input Dims: a list per input, each a list of sizes (nested lists, for TensorList inputs, are kept empty).
std::vector<std::vector<int64_t>> input_dims(const Json& args, const Where& at) {
  std::vector<std::vector<int64_t>> dims;
  const auto it = args.find("Input Dims");
  if (it == args.end()) return dims;
  if (!it->is_array()) at.fail("args 'Input Dims' is " + std::string(it->type_name()) + "; it must be a list of lists");
  for (const Json& input : *it) {
    if (!input.is_array())
      at.fail("args 'Input Dims' holds " + std::string(input.type_name()) + "; each input is a list");
    std::vector<int64_t> shape;
    for (const Json& size : input) {
      if (size.is_array()) {  // a TensorList: its tensors' shapes are not one shape
        shape.clear();
        break;
      }
      if (!size.is_number_integer() || size.get<int64_t>() < 0) {
        at.fail("args 'Input Dims' holds " + echo_value(size.dump(), 30) + "; sizes are integers >= 0");
      }
      shape.push_back(size.get<int64_t>());
    }
    dims.push_back(std::move(shape));
  }
  return dims;
}

std::vector<std::string> input_types(const Json& args, const Where& at) {
  std::vector<std::string> types;
  const auto it = args.find("Input type");
  if (it == args.end()) return types;
  if (!it->is_array()) at.fail("args 'Input type' is " + std::string(it->type_name()) + "; it must be a list");
  for (const Json& t : *it) types.push_back(t.is_string() ? t.get<std::string>() : "");
  return types;
}

CommParams comm_params(const Json& args, const Where& at) {
  CommParams c;
  c.collective = text(args, "Collective name", at);
  c.in_nelems = integer(args, "In msg nelems", at, 0);
  c.out_nelems = integer(args, "Out msg nelems", at, 0);
  if (c.in_nelems < 0 || c.out_nelems < 0) at.fail("a message size is negative; element counts are >= 0");
  c.dtype = text(args, "dtype", at);
  const int64_t size = integer(args, "Group size", at, 0);
  if (size < 0 || size > model::kMaxGroupRanks * int64_t{64})
    at.fail("'Group size' " + std::to_string(size) + " is out of range");
  c.group_size = static_cast<int>(size);
  c.group = text(args, "Process Group Name", at);
  const std::string desc = text(args, "Process Group Description", at);
  if (!desc.empty()) c.group += (c.group.empty() ? "" : " ") + ("(" + desc + ")");
  return c;
}

// A process or thread id: an integer, or 0 (Chrome traces may name them by strings, which tpsim does not join).
int64_t id_field(const Json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number_integer()) return 0;
  return it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX ? 0 : it->get<int64_t>();
}

// A runtime call that launches GPU work: where it ran and when.
struct Launch {
  int64_t pid = 0, tid = 0;
  double start_s = 0, dur_s = 0;
  int op = -1;
};

void read_top(const Json& doc, KinetoTrace& out) {
  if (const auto it = doc.find("record_shapes"); it != doc.end() && it->is_number()) {
    out.record_shapes = it->get<double>() != 0;
  }
  if (const auto it = doc.find("distributedInfo"); it != doc.end() && it->is_object()) {
    if (const auto r = it->find("rank"); r != it->end() && r->is_number_integer()) out.rank = r->get<int>();
    if (const auto w = it->find("world_size"); w != it->end() && w->is_number_integer()) out.world_size = w->get<int>();
  }
  if (const auto it = doc.find("deviceProperties"); it != doc.end() && it->is_array() && !it->empty()) {
    const Json& first = it->front();
    if (first.is_object() && first.contains("name") && first["name"].is_string()) out.device_name = first["name"];
  }
}

// Assigns each launch the innermost CPU op around it on its thread (ops sorted by start per thread).
void join_launches(KinetoTrace& trace, std::vector<Launch>& launches) {
  std::map<std::pair<int64_t, int64_t>, std::vector<int>> by_thread;
  for (int i = 0; i < static_cast<int>(trace.ops.size()); ++i) {
    by_thread[{trace.ops[i].pid, trace.ops[i].tid}].push_back(i);
  }
  for (auto& [thread, ops] : by_thread) {
    std::stable_sort(ops.begin(), ops.end(), [&](int a, int b) {
      const TraceOp& x = trace.ops[a];
      const TraceOp& y = trace.ops[b];
      return std::tie(x.start_s, y.dur_s) < std::tie(y.start_s, x.dur_s);  // outer first on ties
    });
    // Parents: a stack of open ops.
    std::vector<int> open;
    for (int i : ops) {
      TraceOp& op = trace.ops[i];
      while (!open.empty() && trace.ops[open.back()].start_s + trace.ops[open.back()].dur_s < op.start_s)
        open.pop_back();
      op.parent = open.empty() ? -1 : open.back();
      open.push_back(i);
    }
  }
  for (Launch& l : launches) {
    const auto it = by_thread.find({l.pid, l.tid});
    if (it == by_thread.end()) continue;
    const std::vector<int>& ops = it->second;
    // The last op starting at or before the launch; walk out to one that contains it.
    auto pos =
        std::upper_bound(ops.begin(), ops.end(), l.start_s, [&](double t, int i) { return t < trace.ops[i].start_s; });
    if (pos == ops.begin()) continue;
    int op = *(pos - 1);
    while (op >= 0 && trace.ops[op].start_s + trace.ops[op].dur_s < l.start_s + l.dur_s) op = trace.ops[op].parent;
    l.op = op;
  }
}

}  // namespace

bool looks_like_kineto_trace(const std::string& bytes) {
  if (is_gzip(bytes)) return true;  // no other input of tpsim calibrate is gzipped
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || bytes[first] != '{') return false;
  // A measurement file is one JSON object per line, each with a kind: a trace is one document holding
  // traceEvents.
  const std::string first_line = bytes.substr(first, bytes.find('\n', first) - first);
  return bytes.find("\"traceEvents\"") != std::string::npos && first_line.find("\"kind\"") == std::string::npos;
}

namespace {

// Reads a trace's events one by one, then joins each GPU activity to the runtime call that launched it and that
// call's CPU op (by correlation id, or by the ac2g flow that ends on an activity without one).
class TraceBuilder {
 public:
  TraceBuilder(KinetoTrace& out, const std::string& path) : out_(out), path_(path) {}

  void read_event(size_t i, const Json& e) {
    Where at{path_, i, ""};
    if (!e.is_object()) at.fail(std::string("an event is a JSON object, not ") + e.type_name());
    const auto cat_it = e.find("cat");
    if (cat_it == e.end() || !cat_it->is_string()) return;  // metadata and counters
    const std::string& cat = cat_it->get_ref<const std::string&>();
    const bool kernel = cat == "kernel", memcpy = cat == "gpu_memcpy", memset = cat == "gpu_memset";
    const bool cpu_op = cat == "cpu_op", runtime = cat == "cuda_runtime" || cat == "cuda_driver";
    const bool flow = cat == "ac2g";
    if ((cat == "user_annotation" || cpu_op) && e.contains("name") && e["name"].is_string() &&
        e["name"].get_ref<const std::string&>().rfind("ProfilerStep#", 0) == 0) {
      ++out_.profiler_steps;
    }
    if (!kernel && !memcpy && !memset && !cpu_op && !runtime && !flow) return;
    const auto name_it = e.find("name");
    if (name_it == e.end() || !name_it->is_string()) at.fail("no name string; every " + cat + " event has one");
    at.name = name_it->get<std::string>();
    const auto args_it = e.find("args");
    static const Json kNoArgs = Json::object();
    const Json& args = args_it != e.end() && args_it->is_object() ? *args_it : kNoArgs;
    if (args_it != e.end() && !args_it->is_object() && !args_it->is_null()) at.fail("args is not an object");
    if (flow) return read_flow(e, at);
    if (cpu_op) return read_cpu_op(i, e, args, at);
    if (runtime) {
      const double ts = number(e, "ts", at, false) * 1e-6;
      const double dur = number(e, "dur", at, true) * 1e-6;
      const int64_t correlation = integer(args, "correlation", at, -1);
      if (correlation >= 0) launch_of_[correlation] = Launch{id_field(e, "pid"), id_field(e, "tid"), ts, dur, -1};
      return;
    }
    read_activity(i, e, args, at,
                  kernel   ? ActivityKind::kKernel
                  : memcpy ? ActivityKind::kMemcpy
                           : ActivityKind::kMemset);
  }

  // Joins the activities to their launches and CPU ops, and orders them by start.
  void finish() {
    // Activities without a correlation id: the ac2g flow ending on them starts at their launch.
    for (const Unlinked& u : unlinked_) {
      const auto f = flow_end_.find({u.pid, u.tid, u.ts});
      if (f == flow_end_.end()) continue;
      const auto s = flow_start_.find(f->second);
      if (s == flow_start_.end()) continue;
      const int64_t synthetic = -2 - static_cast<int64_t>(u.kernel);
      launch_of_[synthetic] = s->second;
      kernel_correlation_[u.kernel].second = synthetic;
    }
    std::vector<Launch> launches;
    std::unordered_map<int64_t, size_t> slot;
    for (const auto& [id, l] : launch_of_) {
      slot[id] = launches.size();
      launches.push_back(l);
    }
    join_launches(out_, launches);
    for (const auto& [k, correlation] : kernel_correlation_) {
      const auto it = slot.find(correlation);
      if (correlation == -1 || it == slot.end()) continue;
      const Launch& l = launches[it->second];
      out_.kernels[k].op = l.op;
      out_.kernels[k].launch_s = l.start_s;
      out_.kernels[k].launch_dur_s = l.dur_s;
    }
    std::stable_sort(out_.kernels.begin(), out_.kernels.end(),
                     [](const TraceKernel& a, const TraceKernel& b) { return a.start_s < b.start_s; });
  }

 private:
  // An activity without a correlation id: an ac2g flow may end on it.
  struct Unlinked {
    size_t kernel;
    int64_t pid, tid;
    double ts;
  };

  void read_flow(const Json& e, const Where& at) {
    const auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string()) at.fail("a flow event has ph s or f");
    const auto id = e.find("id");
    if (id == e.end() || !id->is_number_integer() || id_field(e, "id") < 0) return;  // string ids: other flows
    Launch where{id_field(e, "pid"), id_field(e, "tid"), number(e, "ts", at, false) * 1e-6, 0, -1};
    if (*ph == "s") flow_start_[id_field(e, "id")] = where;
    if (*ph == "f") flow_end_[{where.pid, where.tid, where.start_s}] = id_field(e, "id");
  }

  void read_cpu_op(size_t i, const Json& e, const Json& args, const Where& at) {
    TraceOp op;
    op.name = at.name;
    op.start_s = number(e, "ts", at, false) * 1e-6;
    op.dur_s = number(e, "dur", at, true) * 1e-6;
    op.pid = id_field(e, "pid");
    op.tid = id_field(e, "tid");
    op.dims = input_dims(args, at);
    op.types = input_types(args, at);
    if (const auto c = args.find("Concrete Inputs"); c != args.end() && c->is_array()) {
      for (const Json& v : *c) op.concrete.push_back(v.is_string() ? v.get<std::string>() : "");
    }
    if (!op.dims.empty()) out_.record_shapes = true;
    if (op.name == "record_param_comms") op.comm = comm_params(args, at);
    op.event = i;
    out_.ops.push_back(std::move(op));
  }

  void read_activity(size_t i, const Json& e, const Json& args, const Where& at, ActivityKind kind) {
    const double ts = number(e, "ts", at, false) * 1e-6;
    const double dur = number(e, "dur", at, true) * 1e-6;
    const int64_t pid = id_field(e, "pid");
    const int64_t tid = id_field(e, "tid");
    TraceKernel k;
    k.kind = kind;
    k.name = at.name;
    k.start_s = ts;
    k.dur_s = dur;
    k.device = integer(args, "device", at, pid);
    k.stream = integer(args, "stream", at, tid);
    const int64_t bytes = integer(args, "bytes", at, 0);
    if (bytes < 0) at.fail("args 'bytes' is negative");
    k.bytes = static_cast<double>(bytes);
    k.event = i;
    const int64_t correlation = integer(args, "correlation", at, -1);
    if (correlation < 0) unlinked_.push_back({out_.kernels.size(), pid, tid, ts});
    kernel_correlation_.emplace_back(out_.kernels.size(), correlation);
    out_.kernels.push_back(std::move(k));
  }

  KinetoTrace& out_;
  const std::string& path_;
  std::unordered_map<int64_t, Launch> launch_of_;                     // correlation id -> runtime call
  std::map<std::tuple<int64_t, int64_t, double>, int64_t> flow_end_;  // ac2g 'f' (pid, tid, ts) -> id
  std::unordered_map<int64_t, Launch> flow_start_;                    // ac2g 's' id -> where
  std::vector<std::pair<size_t, int64_t>> kernel_correlation_;        // kernel index -> correlation (-1: none)
  std::vector<Unlinked> unlinked_;
};

}  // namespace

KinetoTrace parse_kineto_trace(const std::string& bytes, const std::string& path) {
  const std::string plain = is_gzip(bytes) ? gunzip(bytes, path, model::kMaxTextFileBytes) : std::string();
  const std::string& text_in = is_gzip(bytes) ? plain : bytes;
  const Json doc = model::parse_json_located(text_in, path + (is_gzip(bytes) ? " (inflated)" : ""));
  KinetoTrace out;
  out.path = path;
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    throw InputError(echo_path(path) +
                     ": not a profiler trace: a Kineto / Chrome trace is a JSON object with a traceEvents list "
                     "(torch.profiler's export_chrome_trace writes one)");
  }
  read_top(doc, out);
  const Json& events = doc["traceEvents"];
  out.events = events.size();
  TraceBuilder builder(out, path);
  for (size_t i = 0; i < events.size(); ++i) builder.read_event(i, events[i]);
  builder.finish();
  return out;
}

KinetoTrace read_kineto_trace(const std::string& path) {
  return parse_kineto_trace(read_input_file(path, "trace", model::kMaxTextFileBytes,
                                            "profile fewer steps (torch.profiler's schedule) or split it"),
                            path);
}

}  // namespace tpsim::calibrate
