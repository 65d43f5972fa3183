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
#include "cli/commands/plan_merge.hpp"
#include "cli/commands/plan_report.hpp"
#include "cli/commands/sweep_command.hpp"
#include "cli/commands/sweep_journal.hpp"
#include "cli/folder_lock.hpp"
#include "cli/output_file.hpp"
#include "plan/plan_search.hpp"
#include "plan/serving_search.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;
// More worker processes than this is a typo, not a machine (as tpsim sweep).
constexpr int kMaxJobs = 1024;

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
  plan->require_subcommand(0, 1);
  // Not required by CLI11: `tpsim plan merge FILES` names none (run_plan_command asks for it).
  plan->add_option("plan", o.plan, "Plan YAML file (see docs/plan.md)")->check(CLI::ExistingFile);
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
  plan->add_flag(
      "--exhaustive", o.exhaustive,
      "Simulate every candidate that survives pruning, also those whose lower bound ranks them below the top "
      "rows");
  plan->add_flag("--no-cache", o.no_cache, "Simulate every program, even one identical to a program simulated before");
  plan->add_flag("!--no-progress", o.progress, "Do not show progress (shown only on a terminal)");
  return plan;
}

int run_plan_command(const PlanCommandOptions& o) {
  if (o.plan.empty())
    throw InputError("tpsim plan needs a plan file (or the merge subcommand and the shards' --json files)");
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
  options.top = o.exhaustive ? 0 : o.top;
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
  Json doc;
  std::string csv, text;
  if (spec.serving) {
    const plan::ServingResult result = plan::run_serving_plan(spec, options);
    doc = serving_json(spec, result, o.top);
    text = plan_summary(doc, options.cache) + serving_table(doc);
    csv = serving_csv(doc);
    failures = result.failures, saved_s = result.cache_saved_s;
  } else {
    const plan::PlanResult result = plan::run_plan(spec, options);
    doc = plan_json(spec, result, options.rank_by, o.top);
    text = plan_summary(doc, options.cache) + plan_table(doc);
    csv = plan_csv(doc);
    failures = result.failures, saved_s = result.cache_saved_s;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.json_out.empty()) outputs.emplace_back(o.json_out, doc.dump(2) + "\n");
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
  add_plan_merge_command(*plan_app, commands);  // before its parent's entry: plan_app->parsed() holds for it too
  commands.push_back({plan_app, [options] { return run_plan_command(*options); }});
}

}  // namespace tpsim::cli
