// The JSON documents of a training and a serving plan, and the summary line, tables and CSVs made from them.
#include "cli/commands/plan_report.hpp"

#include <algorithm>

#include "base/units.hpp"
#include "cli/commands/sweep_journal.hpp"
#include "cli/report/text_table.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;
using sim::kGiB;

std::string num(const char* format, const Json& value) {
  return model::format_number(format, value.get<double>());
}
std::string num(const char* format, double value) {
  return model::format_number(format, value);
}
std::string whole(const Json& value) {
  return std::to_string(value.get<int64_t>());
}

std::string targets_text(const Json& targets) {
  std::string text;
  if (targets.contains("ttft_s")) text += "TTFT <= " + num("%g", targets["ttft_s"].get<double>() * 1e3) + " ms";
  if (targets.contains("tpot_s")) {
    text +=
        (text.empty() ? "" : ", ") + std::string("TPOT <= ") + num("%g", targets["tpot_s"].get<double>() * 1e3) + " ms";
  }
  return text;
}

// "tpot 84%" (the binding target and how much of it the candidate uses), "misses ttft", or "-" without targets.
std::string target_cell(const Json& row) {
  if (row["binding_target"].is_null()) return "-";
  if (row["meets_targets"])
    return row["binding_target"].get<std::string>() + " " + num("%.0f%%", row["target_use"].get<double>() * 100);
  std::string text = "misses ";
  const Json& missed = row["missed_targets"];
  for (size_t i = 0; i < missed.size(); ++i) text += (i ? "+" : "") + missed[i].get<std::string>();
  return text;
}

// What was simulated and what came from closed forms, for a row.
std::pair<std::string, std::string> provenance(const plan::ServingLayout& l, model::Batching batching) {
  std::string closed = l.ep > l.tp ? "ep all-to-alls beyond the TP group, memory" : "memory";
  if (batching == model::Batching::kContinuous) {
    closed += ", continuous batching's TTFT and TPOT from the simulated prefill and decode steps";
  }
  return {
      "the prefill and the first, middle and last decode steps (one TP group); the other decode steps by the "
      "quadratic through those three",
      closed};
}

}  // namespace

void add_pruning_json(Json& j, const plan::SearchTotals& r) {
  j["candidates"] = r.candidates;
  j["pruned"] = Json::object();
  for (const auto& [reason, count] : r.pruned) j["pruned"][reason] = count;
  j["pruned_why"] = Json::object();
  for (const auto& [reason, messages] : r.why) {
    for (const auto& [message, count] : messages) j["pruned_why"][reason][message] = count;
  }
}

void add_simulation_json(Json& j, size_t simulated, const plan::SearchTotals& r, const Json& between) {
  j["simulated"] = simulated;
  j["bounded"] = r.bounded;
  if (r.bounded_after_first_run > 0) j["bounded_after_first_run"] = r.bounded_after_first_run;
  for (const auto& [key, value] : between.items()) j[key] = value;
  j["programs"] = {{"simulated", r.cache_misses}, {"reused", r.cache_hits}};
  j["failures"] = r.failures;
}

std::string plan_summary(const Json& doc, bool cache) {
  int64_t total = 0;
  for (const auto& [reason, count] : doc["pruned"].items()) total += count.get<int64_t>();
  std::string text = whole(doc["candidates"]) + " candidates: " + std::to_string(total) + " pruned (";
  bool first = true;
  for (const auto& [reason, count] : doc["pruned"].items()) {
    text += (first ? "" : ", ") + reason + " " + whole(count);
    first = false;
  }
  text += "), " + whole(doc["simulated"]) + " simulated";
  if (doc.value("bounded", 0) > 0) text += ", " + whole(doc["bounded"]) + " bounded";
  if (doc.value("bounded_after_first_run", 0) > 0) {
    text += " (" + whole(doc["bounded_after_first_run"]) + " after a first run)";
  }
  if (!doc["failures"].empty()) text += ", " + std::to_string(doc["failures"].size()) + " refused by the simulator";
  if (doc.contains("targets")) {
    const std::string targets = targets_text(doc["targets"]);
    if (!targets.empty()) text += ", " + whole(doc["meeting_targets"]) + " meet " + targets;
    if (doc.contains("workload") && doc["workload"].contains("batching")) {
      text += " (" + doc["workload"]["batching"].get<std::string>() + " batching)";
    }
  }
  return text + (cache ? "; programs simulated " + whole(doc["programs"]["simulated"]) + ", reused " +
                             whole(doc["programs"]["reused"]) + "\n"
                       : "; every program simulated (--no-cache)\n");
}

Json plan_json(const model::PlanSpec& spec, const plan::PlanResult& r, plan::RankBy rank_by, size_t top) {
  Json j;
  j["plan"] = spec.name;
  j["fingerprint"] = fingerprint_of(spec.text);
  j["rank_by"] = std::string(name_of(plan::kRankByNames, rank_by));
  add_pruning_json(j, r);
  add_simulation_json(j, r.rows.size(), r);
  j["rows"] = Json::array();
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const plan::PlanRow& p = r.rows[i];
    const plan::Layout& l = p.layout;
    Json row;
    row["rank"] = i + 1;
    row["index"] = p.index;
    row["layout"] = plan::describe(l);
    row["gpus"] = l.gpus, row["tp"] = l.tp, row["pp"] = l.pp, row["dp"] = l.dp, row["ep"] = l.ep;
    row["data_parallel"] = l.data_parallel, row["micro_batch"] = l.micro_batch, row["schedule"] = l.schedule;
    row["virtual_stages"] = l.virtual_stages, row["recompute"] = l.recompute, row["tp_mode"] = l.tp_mode;
    row["time_s"] = p.time_s;
    row["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
    row["mfu"] = p.mfu;
    row["memory_GiB"] = p.memory_bytes / kGiB;
    row["bubble_fraction"] = p.bubble_fraction;
    row["exposed_s"] = {{"tp", p.exposed_tp_s}, {"pp", p.exposed_pp_s}, {"dp", p.exposed_dp_s}, {"ep", p.exposed_ep_s}};
    row["bound"] = p.bound;
    row["simulated"] = p.simulated;
    row["closed_form"] = p.closed_form;
    j["rows"].push_back(row);
  }
  return j;
}

std::string plan_table(const Json& doc) {
  std::vector<std::vector<std::string>> rows;
  for (const Json& p : doc["rows"]) {
    const Json& e = p["exposed_s"];
    rows.push_back({whole(p["rank"]), whole(p["index"]), p["layout"].get<std::string>(),
                    num("%.1f", p["time_s"].get<double>() * 1e3), num("%.0f", p["tokens_per_s_per_gpu"]),
                    num("%.1f%%", p["mfu"].get<double>() * 100), num("%.1f", p["memory_GiB"]),
                    num("%.1f%%", p["bubble_fraction"].get<double>() * 100), num("%.1f", e["tp"].get<double>() * 1e3),
                    num("%.1f", e["pp"].get<double>() * 1e3), num("%.1f", e["dp"].get<double>() * 1e3),
                    num("%.1f", e["ep"].get<double>() * 1e3), p["bound"].get<std::string>()});
  }
  return text_table({"rank", "#", "layout", "step ms", "tok/s/GPU", "MFU", "mem GiB", "bubble", "tp ms", "pp ms",
                     "dp ms", "ep ms", "bound"},
                    rows, 3);
}

std::string plan_csv(const Json& doc) {
  std::string out =
      "rank,index,layout,gpus,tp,pp,dp,ep,data_parallel,micro_batch,schedule,virtual_stages,recompute,tp_mode,time_s,"
      "tokens_per_s_per_gpu,mfu,memory_GiB,bubble_fraction,exposed_tp_s,exposed_pp_s,exposed_dp_s,exposed_ep_s,bound\n";
  for (const Json& p : doc["rows"]) {
    const Json& e = p["exposed_s"];
    out += whole(p["rank"]) + "," + whole(p["index"]) + "," + p["layout"].get<std::string>() + "," + whole(p["gpus"]) +
           "," + whole(p["tp"]) + "," + whole(p["pp"]) + "," + whole(p["dp"]) + "," + whole(p["ep"]) + "," +
           p["data_parallel"].get<std::string>() + "," + whole(p["micro_batch"]) + "," +
           p["schedule"].get<std::string>() + "," + whole(p["virtual_stages"]) + "," +
           p["recompute"].get<std::string>() + "," + p["tp_mode"].get<std::string>() + "," + num("%.9g", p["time_s"]) +
           "," + num("%.9g", p["tokens_per_s_per_gpu"]) + "," + num("%.6g", p["mfu"]) + "," +
           num("%.6g", p["memory_GiB"]) + "," + num("%.6g", p["bubble_fraction"]) + "," + num("%.9g", e["tp"]) + "," +
           num("%.9g", e["pp"]) + "," + num("%.9g", e["dp"]) + "," + num("%.9g", e["ep"]) + "," +
           p["bound"].get<std::string>() + "\n";
  }
  return out;
}

std::string serving_table(const Json& doc) {
  std::vector<std::vector<std::string>> rows;
  for (const Json& p : doc["rows"]) {
    const bool meets = p["meets_targets"];
    rows.push_back({meets ? whole(p["rank"]) : "-", whole(p["index"]), p["layout"].get<std::string>(),
                    whole(p["sequences"]), num("%.1f", p["ttft_s"].get<double>() * 1e3),
                    num("%.2f", p["tpot_s"].get<double>() * 1e3), num("%.1f", p["tokens_per_s_per_user"]),
                    num("%.0f", p["tokens_per_s_per_gpu"]), num("%.1f", p["memory_GiB"]), p["front"] ? "*" : "",
                    target_cell(p)});
  }
  return text_table(
      {"rank", "#", "layout", "seqs", "TTFT ms", "TPOT ms", "tok/s/user", "tok/s/GPU", "mem GiB", "front", "target"},
      rows, 3);
}

Json sorted_front(std::vector<Json> points) {
  std::stable_sort(points.begin(), points.end(), [](const Json& a, const Json& b) {
    const double x = a["tokens_per_s_per_user"], y = b["tokens_per_s_per_user"];
    if (x != y) return x > y;
    return a["index"].get<size_t>() < b["index"].get<size_t>();
  });
  Json front = Json::array();
  for (Json& point : points) front.push_back(std::move(point));
  return front;
}

Json serving_json(const model::PlanSpec& spec, const plan::ServingResult& r, size_t top) {
  Json j;
  j["plan"] = spec.name;
  j["fingerprint"] = fingerprint_of(spec.text);
  j["kind"] = "serving";
  j["workload"] = {{"context_len", spec.serve.context_len},
                   {"gen_len", spec.serve.gen_len},
                   {"batching", std::string(name_of(model::kBatchingNames, spec.serve.batching))}};
  j["targets"] = Json::object();
  if (spec.serve.ttft_s) j["targets"]["ttft_s"] = *spec.serve.ttft_s;
  if (spec.serve.tpot_s) j["targets"]["tpot_s"] = *spec.serve.tpot_s;
  add_pruning_json(j, r);
  add_simulation_json(j, r.rows.size(), r, {{"meeting_targets", r.meeting}});
  j["rows"] = Json::array();
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const plan::ServingRow& p = r.rows[i];
    const plan::ServingLayout& l = p.layout;
    Json row;
    row["rank"] = p.targets.meets ? Json(i + 1) : Json(nullptr);
    row["index"] = p.index;
    row["layout"] = plan::describe(l);
    row["gpus"] = l.gpus, row["tp"] = l.tp, row["ep"] = l.ep, row["attention_dp"] = l.attention_dp();
    row["replicas"] = l.replicas(), row["batch"] = l.batch, row["sequences"] = l.sequences();
    row["dtype"] = l.dtype, row["tp_mode"] = l.tp_mode, row["dispatcher"] = l.dispatcher;
    row["two_batch_overlap"] = l.two_batch_overlap, row["cuda_graphs"] = l.cuda_graphs;
    row["ttft_s"] = p.ttft_s;
    row["tpot_s"] = p.tpot_s;
    row["prefill_s"] = p.prefill_s;
    row["decode_step_s"] = p.decode_step_s;
    row["tokens_per_s_per_user"] = p.tokens_per_s_per_user();
    row["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
    row["time_s"] = p.time_s;
    row["memory_GiB"] = p.memory_bytes / kGiB;
    row["exposed_s"] = {{"tp", p.exposed_tp_s}, {"ep", p.exposed_ep_s}};
    row["meets_targets"] = p.targets.meets;
    row["binding_target"] = p.targets.binding.empty() ? Json(nullptr) : Json(p.targets.binding);
    row["target_use"] = p.targets.use;
    row["missed_targets"] = p.targets.missed;
    row["front"] = p.front;
    const auto [simulated, closed_form] = provenance(l, spec.serve.batching);
    row["simulated"] = simulated;
    row["closed_form"] = closed_form;
    j["rows"].push_back(row);
  }
  // The whole front, whether or not its rows are among the top ones.
  std::vector<Json> front;
  for (const plan::ServingRow& p : r.rows) {
    if (!p.front) continue;
    front.push_back({{"index", p.index},
                     {"layout", plan::describe(p.layout)},
                     {"tokens_per_s_per_user", p.tokens_per_s_per_user()},
                     {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                     {"meets_targets", p.targets.meets}});
  }
  j["front"] = sorted_front(std::move(front));
  return j;
}

std::string serving_csv(const Json& doc) {
  std::string out =
      "rank,index,layout,gpus,tp,ep,attention_dp,batch,sequences,dtype,dispatcher,two_batch_overlap,cuda_graphs,ttft_s,"
      "tpot_s,tokens_per_s_per_user,tokens_per_s_per_gpu,memory_GiB,meets_targets,binding_target,target_use,front\n";
  const auto flag = [](const Json& value) { return std::string(value.get<bool>() ? "true" : "false"); };
  for (const Json& p : doc["rows"]) {
    const bool meets = p["meets_targets"];
    out += (meets ? whole(p["rank"]) : "") + "," + whole(p["index"]) + "," + p["layout"].get<std::string>() + "," +
           whole(p["gpus"]) + "," + whole(p["tp"]) + "," + whole(p["ep"]) + "," + whole(p["attention_dp"]) + "," +
           whole(p["batch"]) + "," + whole(p["sequences"]) + "," + p["dtype"].get<std::string>() + "," +
           p["dispatcher"].get<std::string>() + "," + flag(p["two_batch_overlap"]) + "," + flag(p["cuda_graphs"]) +
           "," + num("%.9g", p["ttft_s"]) + "," + num("%.9g", p["tpot_s"]) + "," +
           num("%.9g", p["tokens_per_s_per_user"]) + "," + num("%.9g", p["tokens_per_s_per_gpu"]) + "," +
           num("%.6g", p["memory_GiB"]) + "," + flag(p["meets_targets"]) + "," +
           (p["binding_target"].is_null() ? std::string() : p["binding_target"].get<std::string>()) + "," +
           num("%.6g", p["target_use"]) + "," + flag(p["front"]) + "\n";
  }
  return out;
}

}  // namespace tpsim::cli
