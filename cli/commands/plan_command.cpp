// The plan command: options, the ranked table on stdout, JSON and CSV files, --explain.
#include "cli/commands/plan_command.hpp"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "cli/arguments.hpp"
#include "cli/commands/plan_serving_report.hpp"
#include "cli/commands/sweep_command.hpp"
#include "cli/commands/sweep_journal.hpp"
#include "cli/folder_lock.hpp"
#include "cli/output_file.hpp"
#include "cli/report/text_table.hpp"
#include "plan/plan_search.hpp"
#include "plan/serving_search.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// More worker processes than this is a typo, not a machine (as tpsim sweep).
constexpr int kMaxJobs = 1024;

std::string num(const char* format, double value) {
  return model::format_number(format, value);
}

std::string table(const plan::PlanResult& r, size_t top) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const plan::PlanRow& p = r.rows[i];
    rows.push_back({std::to_string(i + 1), std::to_string(p.index), plan::describe(p.layout),
                    num("%.1f", p.time_s * 1e3), num("%.0f", p.tokens_per_s_per_gpu), num("%.1f%%", p.mfu * 100),
                    num("%.1f", p.memory_bytes / kGiB), num("%.1f%%", p.bubble_fraction * 100),
                    num("%.1f", p.exposed_tp_s * 1e3), num("%.1f", p.exposed_pp_s * 1e3),
                    num("%.1f", p.exposed_dp_s * 1e3), num("%.1f", p.exposed_ep_s * 1e3), p.bound});
  }
  return text_table({"rank", "#", "layout", "step ms", "tok/s/GPU", "MFU", "mem GiB", "bubble", "tp ms", "pp ms",
                     "dp ms", "ep ms", "bound"},
                    rows, 3);
}

std::string summary(const plan::PlanResult& r, bool cache) {
  std::string text = pruning_summary(r.candidates, r.pruned) + ", " + std::to_string(r.rows.size()) + " simulated";
  if (!r.failures.empty()) text += ", " + std::to_string(r.failures.size()) + " refused by the simulator";
  text += cache ? "; programs simulated " + std::to_string(r.cache_misses) + ", reused " +
                      std::to_string(r.cache_hits) + "\n"
                : "; every program simulated (--no-cache)\n";
  return text;
}

Json json_of(const model::PlanSpec& spec, const plan::PlanResult& r, size_t top) {
  Json j;
  j["plan"] = spec.name;
  j["candidates"] = r.candidates;
  j["pruned"] = Json::object();
  for (const auto& [reason, count] : r.pruned) j["pruned"][reason] = count;
  j["pruned_why"] = Json::object();
  for (const auto& [reason, messages] : r.why) {
    for (const auto& [message, count] : messages) j["pruned_why"][reason][message] = count;
  }
  j["simulated"] = r.rows.size();
  j["programs"] = {{"simulated", r.cache_misses}, {"reused", r.cache_hits}};
  j["failures"] = r.failures;
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

std::string csv_of(const plan::PlanResult& r, size_t top) {
  std::string out =
      "rank,index,layout,gpus,tp,pp,dp,ep,data_parallel,micro_batch,schedule,virtual_stages,recompute,tp_mode,time_s,"
      "tokens_per_s_per_gpu,mfu,memory_GiB,bubble_fraction,exposed_tp_s,exposed_pp_s,exposed_dp_s,exposed_ep_s,bound\n";
  for (size_t i = 0; i < r.rows.size() && i < top; ++i) {
    const plan::PlanRow& p = r.rows[i];
    const plan::Layout& l = p.layout;
    out += std::to_string(i + 1) + "," + std::to_string(p.index) + "," + plan::describe(l) + "," +
           std::to_string(l.gpus) + "," + std::to_string(l.tp) + "," + std::to_string(l.pp) + "," +
           std::to_string(l.dp) + "," + std::to_string(l.ep) + "," + l.data_parallel + "," +
           std::to_string(l.micro_batch) + "," + l.schedule + "," + std::to_string(l.virtual_stages) + "," +
           l.recompute + "," + l.tp_mode + "," + num("%.9g", p.time_s) + "," + num("%.9g", p.tokens_per_s_per_gpu) +
           "," + num("%.6g", p.mfu) + "," + num("%.6g", p.memory_bytes / kGiB) + "," + num("%.6g", p.bubble_fraction) +
           "," + num("%.9g", p.exposed_tp_s) + "," + num("%.9g", p.exposed_pp_s) + "," + num("%.9g", p.exposed_dp_s) +
           "," + num("%.9g", p.exposed_ep_s) + "," + p.bound + "\n";
  }
  return out;
}

// The candidate's scenario, headed by why it was pruned where it was.
template <typename Candidate, typename Write, typename Check>
std::string explained(const std::vector<Candidate>& all, long index, const Write& write, const Check& check) {
  if (index < 0 || static_cast<size_t>(index) >= all.size()) {
    throw InputError("--explain " + std::to_string(index) + ": the plan has candidates 0 to " +
                     std::to_string(all.size() - 1));
  }
  const Candidate& c = all[static_cast<size_t>(index)];
  std::string text = write(c);
  if (const plan::Verdict v = check(c); !v.reason.empty()) {
    text = "# pruned (" + v.reason + "): " + v.detail + "\n" + text;
  }
  return text;
}

int explain(const model::PlanSpec& spec, long index) {
  const model::ArchSpec arch = plan::plan_arch(spec);
  const int per_node = plan::plan_gpus_per_node(spec);
  if (spec.serving) {
    write_output(
        "-", explained(
                 plan::enumerate_serving_candidates(spec, arch, per_node), index,
                 [&](const plan::ServingCandidate& c) { return plan::serving_scenario_text(spec, c, per_node); },
                 [&](const plan::ServingCandidate& c) { return plan::check_serving_candidate(spec, c, per_node); }));
    return 0;
  }
  write_output("-", explained(
                        plan::enumerate_candidates(spec, arch, per_node), index,
                        [&](const plan::Candidate& c) { return plan::scenario_text(spec, c, per_node); },
                        [&](const plan::Candidate& c) { return plan::check_candidate(spec, c, per_node); }));
  return 0;
}

size_t candidate_count(const model::PlanSpec& spec) {
  const model::ArchSpec arch = plan::plan_arch(spec);
  const int per_node = plan::plan_gpus_per_node(spec);
  return spec.serving ? plan::enumerate_serving_candidates(spec, arch, per_node).size()
                      : plan::enumerate_candidates(spec, arch, per_node).size();
}

// A serving plan ranks by tokens/s per GPU among the candidates that meet its targets.
plan::RankBy rank_by_of(const model::PlanSpec& spec, const std::string& name) {
  if (!spec.serving) return plan::rank_by_named(name.empty() ? "time" : name);
  if (!name.empty() && name != "tokens") {
    throw InputError("--rank-by " + name +
                     ": a serving plan ranks by tokens (output tokens/s per GPU) among the candidates that meet its "
                     "targets");
  }
  return plan::RankBy::kTokensPerGpu;
}

}  // namespace

static CLI::App* add_plan_options(CLI::App& app, PlanCommandOptions& o) {
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Search the layouts of a training job or a serving deployment (a plan file), prune what cannot run, simulate and "
      "rank the rest");
  plan->add_option("plan", o.plan, "Plan YAML file (see docs/plan.md)")->required()->check(CLI::ExistingFile);
  plan->add_option("-j,--jobs", o.jobs, "Worker processes")->capture_default_str();
  plan->add_option("--top", o.top, "Rows to show (and write)")->capture_default_str();
  plan->add_option("--json", o.json_out, "Write the ranked rows and the pruning counts as JSON to FILE, or -")
      ->check(output_file_path());
  plan->add_option("--csv", o.csv_out, "Write the ranked rows as CSV to FILE, or -")->check(output_file_path());
  plan->add_option("--rank-by", o.rank_by,
                   "time (step time: a training plan's default), tokens (tokens/s per GPU: a serving plan's only) or "
                   "mfu");
  plan->add_option("--shard", o.shard, "Simulate only shard i of N (i/N) of the candidates that survive pruning");
  plan->add_option("-o,--out", o.out_dir,
                   "Folder for journal.jsonl: each simulated row as it finishes; a rerun with the same folder resumes")
      ->check(output_folder_path());
  plan->add_option("--explain", o.explain, "Print candidate N (the table's # column) as a scenario for tpsim run");
  plan->add_flag("--no-cache", o.no_cache, "Simulate every program, even one identical to a program simulated before");
  plan->add_flag("!--no-progress", o.progress, "Do not show progress (shown only on a terminal)");
  return plan;
}

int run_plan_command(const PlanCommandOptions& o) {
  const model::PlanSpec spec = model::load_plan(o.plan);
  if (o.explain >= 0) return explain(spec, o.explain);
  if (o.jobs < 1 || o.jobs > kMaxJobs) {
    throw InputError("-j " + std::to_string(o.jobs) + ": must be from 1 to " + std::to_string(kMaxJobs));
  }
  if (o.top < 1) throw InputError("--top 0: show at least one row");
  plan::PlanOptions options;
  options.jobs = o.jobs;
  options.cache = !o.no_cache;
  options.progress = o.progress && ::isatty(STDERR_FILENO);
  options.rank_by = rank_by_of(spec, o.rank_by);
  if (!o.shard.empty()) {
    const Shard shard = parse_shard(o.shard);
    options.shard_index = shard.index, options.shard_count = shard.count;
  }
  std::optional<FolderLock> lock;
  std::optional<SweepJournal> journal;
  if (!o.out_dir.empty()) {
    // The journal's points are the plan's candidates; its fingerprint the plan file's bytes.
    const size_t candidates = candidate_count(spec);
    lock.emplace(o.out_dir);
    journal.emplace(o.out_dir, fingerprint_of(spec.text), candidates);
    for (const auto& [index, entry] : journal->load()) {
      if (entry.rows.size() == 1) options.done[index] = entry.rows[0];
    }
    options.on_row = [&](size_t index, const Json& numbers) {
      journal->append(JournalEntry{index, {}, Json::array({numbers})});
    };
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, std::string>> outputs;
  std::vector<std::string> failures;
  double saved_s = 0;
  std::string json, csv, text;
  if (spec.serving) {
    const plan::ServingResult result = plan::run_serving_plan(spec, options);
    json = serving_json(spec, result, o.top).dump(2) + "\n";
    csv = serving_csv(result, o.top);
    text = serving_summary(spec, result, options.cache) + serving_table(result, o.top);
    failures = result.failures, saved_s = result.cache_saved_s;
  } else {
    const plan::PlanResult result = plan::run_plan(spec, options);
    json = json_of(spec, result, o.top).dump(2) + "\n";
    csv = csv_of(result, o.top);
    text = summary(result, options.cache) + table(result, o.top);
    failures = result.failures, saved_s = result.cache_saved_s;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.json_out.empty()) outputs.emplace_back(o.json_out, json);
  if (!o.csv_out.empty()) outputs.emplace_back(o.csv_out, csv);
  const bool stdout_taken = o.json_out == "-" || o.csv_out == "-";
  if (!stdout_taken) outputs.emplace_back("-", text);
  write_outputs(outputs);
  for (const std::string& failure : failures) std::cerr << "plan: refused: " << failure << "\n";
  // Wall times differ from run to run: shown on a terminal only, so that redirected outputs stay byte-identical.
  if (options.progress) {
    std::cerr << "plan: " << model::format_number("%.1f", wall) << " s; reused programs saved "
              << model::format_number("%.1f", saved_s) << " s of simulation\n";
  }
  finish_stdout();
  return 0;
}

void add_plan_command(CLI::App& app, Commands& commands) {
  auto options = std::make_shared<PlanCommandOptions>();
  CLI::App* plan_app = add_plan_options(app, *options);
  commands.push_back({plan_app, [options] { return run_plan_command(*options); }});
}

}  // namespace tpsim::cli
