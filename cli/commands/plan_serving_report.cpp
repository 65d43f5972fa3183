// Serving plan outputs: summary, table, JSON and CSV of the ranked candidates and their Pareto front.
#include "cli/commands/plan_serving_report.hpp"

#include <algorithm>

#include "base/units.hpp"
#include "cli/report/text_table.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string num(const char* format, double value) {
  return model::format_number(format, value);
}

// "tpot 84%" (the binding target and how much of it the candidate uses), "misses ttft", or "-" without targets.
std::string target_cell(const plan::TargetCheck& t) {
  if (t.binding.empty()) return "-";
  if (t.meets) return t.binding + " " + num("%.0f%%", t.use * 100);
  std::string text = "misses ";
  for (size_t i = 0; i < t.missed.size(); ++i) text += (i ? "+" : "") + t.missed[i];
  return text;
}

std::string targets_text(const model::ServingWorkload& serve) {
  std::string text;
  if (serve.ttft_s) text += "TTFT <= " + num("%g", *serve.ttft_s * 1e3) + " ms";
  if (serve.tpot_s)
    text += (text.empty() ? "" : ", ") + std::string("TPOT <= ") + num("%g", *serve.tpot_s * 1e3) + " ms";
  return text;
}

// What was simulated and what came from closed forms, for a row.
std::pair<std::string, std::string> provenance(const plan::ServingLayout& l) {
  std::string closed = l.ep > l.tp ? "ep all-to-alls beyond the TP group, memory" : "memory";
  return {
      "the prefill and the first, middle and last decode steps (one TP group); the other decode steps by the "
      "quadratic through those three",
      closed};
}

}  // namespace

std::string pruning_summary(size_t candidates, const std::map<std::string, int64_t>& pruned) {
  int64_t total = 0;
  for (const auto& [reason, count] : pruned) total += count;
  std::string text = std::to_string(candidates) + " candidates: " + std::to_string(total) + " pruned (";
  bool first = true;
  for (const auto& [reason, count] : pruned) {
    text += (first ? "" : ", ") + reason + " " + std::to_string(count);
    first = false;
  }
  return text + ")";
}

std::string serving_summary(const model::PlanSpec& spec, const plan::ServingResult& r, bool cache) {
  std::string text = pruning_summary(r.candidates, r.pruned) + ", " + std::to_string(r.rows.size()) + " simulated";
  if (!r.failures.empty()) text += ", " + std::to_string(r.failures.size()) + " refused by the simulator";
  const std::string targets = targets_text(spec.serve);
  if (!targets.empty()) text += ", " + std::to_string(r.meeting) + " meet " + targets;
  text += cache ? "; programs simulated " + std::to_string(r.cache_misses) + ", reused " +
                      std::to_string(r.cache_hits) + "\n"
                : "; every program simulated (--no-cache)\n";
  return text;
}

std::string serving_table(const plan::ServingResult& r, size_t top) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const plan::ServingRow& p = r.rows[i];
    rows.push_back({p.targets.meets ? std::to_string(i + 1) : "-", std::to_string(p.index), plan::describe(p.layout),
                    std::to_string(p.layout.sequences()), num("%.1f", p.ttft_s * 1e3), num("%.2f", p.tpot_s * 1e3),
                    num("%.1f", p.tokens_per_s_per_user()), num("%.0f", p.tokens_per_s_per_gpu),
                    num("%.1f", p.memory_bytes / kGiB), p.front ? "*" : "", target_cell(p.targets)});
  }
  return text_table(
      {"rank", "#", "layout", "seqs", "TTFT ms", "TPOT ms", "tok/s/user", "tok/s/GPU", "mem GiB", "front", "target"},
      rows, 3);
}

Json serving_json(const model::PlanSpec& spec, const plan::ServingResult& r, size_t top) {
  Json j;
  j["plan"] = spec.name;
  j["kind"] = "serving";
  j["workload"] = {{"context_len", spec.serve.context_len}, {"gen_len", spec.serve.gen_len}};
  j["targets"] = Json::object();
  if (spec.serve.ttft_s) j["targets"]["ttft_s"] = *spec.serve.ttft_s;
  if (spec.serve.tpot_s) j["targets"]["tpot_s"] = *spec.serve.tpot_s;
  j["candidates"] = r.candidates;
  j["pruned"] = Json::object();
  for (const auto& [reason, count] : r.pruned) j["pruned"][reason] = count;
  j["pruned_why"] = Json::object();
  for (const auto& [reason, messages] : r.why) {
    for (const auto& [message, count] : messages) j["pruned_why"][reason][message] = count;
  }
  j["simulated"] = r.rows.size();
  j["meeting_targets"] = r.meeting;
  j["programs"] = {{"simulated", r.cache_misses}, {"reused", r.cache_hits}};
  j["failures"] = r.failures;
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
    const auto [simulated, closed_form] = provenance(l);
    row["simulated"] = simulated;
    row["closed_form"] = closed_form;
    j["rows"].push_back(row);
  }
  // The whole front, whether or not its rows are among the top ones: most tokens/s per user first.
  std::vector<const plan::ServingRow*> front;
  for (const plan::ServingRow& p : r.rows) {
    if (p.front) front.push_back(&p);
  }
  std::stable_sort(front.begin(), front.end(), [](const plan::ServingRow* a, const plan::ServingRow* b) {
    if (a->tokens_per_s_per_user() != b->tokens_per_s_per_user()) {
      return a->tokens_per_s_per_user() > b->tokens_per_s_per_user();
    }
    return a->index < b->index;
  });
  j["front"] = Json::array();
  for (const plan::ServingRow* p : front) {
    j["front"].push_back({{"index", p->index},
                          {"layout", plan::describe(p->layout)},
                          {"tokens_per_s_per_user", p->tokens_per_s_per_user()},
                          {"tokens_per_s_per_gpu", p->tokens_per_s_per_gpu},
                          {"meets_targets", p->targets.meets}});
  }
  return j;
}

std::string serving_csv(const plan::ServingResult& r, size_t top) {
  std::string out =
      "rank,index,layout,gpus,tp,ep,attention_dp,batch,sequences,dtype,dispatcher,two_batch_overlap,cuda_graphs,ttft_s,"
      "tpot_s,tokens_per_s_per_user,tokens_per_s_per_gpu,memory_GiB,meets_targets,binding_target,target_use,front\n";
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const plan::ServingRow& p = r.rows[i];
    const plan::ServingLayout& l = p.layout;
    out += (p.targets.meets ? std::to_string(i + 1) : "") + "," + std::to_string(p.index) + "," + plan::describe(l) +
           "," + std::to_string(l.gpus) + "," + std::to_string(l.tp) + "," + std::to_string(l.ep) + "," +
           std::to_string(l.attention_dp()) + "," + std::to_string(l.batch) + "," + std::to_string(l.sequences()) +
           "," + l.dtype + "," + l.dispatcher + "," + (l.two_batch_overlap ? "true" : "false") + "," +
           (l.cuda_graphs ? "true" : "false") + "," + num("%.9g", p.ttft_s) + "," + num("%.9g", p.tpot_s) + "," +
           num("%.9g", p.tokens_per_s_per_user()) + "," + num("%.9g", p.tokens_per_s_per_gpu) + "," +
           num("%.6g", p.memory_bytes / kGiB) + "," + (p.targets.meets ? "true" : "false") + "," + p.targets.binding +
           "," + num("%.6g", p.targets.use) + "," + (p.front ? "true" : "false") + "\n";
  }
  return out;
}

}  // namespace tpsim::cli
