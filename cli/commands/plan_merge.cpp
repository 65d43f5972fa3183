// Merging the --json files of a plan's shards: the same checks as one plan, the rows ranked as one run ranks them.
#include "cli/commands/plan_merge.hpp"

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "cli/arguments.hpp"
#include "cli/commands/plan_report.hpp"
#include "cli/output_file.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;
// A plan's --json file with every row of a large plan is a few MiB.
constexpr int64_t kMaxPlanJsonBytes = int64_t{256} << 20;
// Keys every shard of one plan writes alike (the pruning runs on every candidate in each shard).
const char* const kPlanKeys[] = {"plan",    "fingerprint", "kind",   "rank_by",   "workload",
                                 "targets", "candidates",  "pruned", "pruned_why"};
const char* const kRequiredKeys[] = {"plan",      "fingerprint", "candidates", "pruned",
                                     "simulated", "programs",    "failures",   "rows"};

// A value in an error line: short ones whole, long ones not.
std::string shown(const Json& value) {
  const std::string text = value.dump();
  return text.size() <= 60 ? text : "(" + std::to_string(text.size()) + " characters)";
}

void check_document(const Json& doc, const std::string& name) {
  if (!doc.is_object()) throw InputError(name + ": not a tpsim plan --json file (not a JSON object)");
  for (const char* key : kRequiredKeys) {
    if (!doc.contains(key)) {
      throw InputError(name + ": no '" + key + "' key: not a tpsim plan --json file (write the shards with --json)");
    }
  }
}

void check_same_plan(const Json& doc, const std::string& name, const Json& first, const std::string& first_name) {
  for (const char* key : kPlanKeys) {
    const Json none;
    const Json& mine = doc.contains(key) ? doc[key] : none;
    const Json& theirs = first.contains(key) ? first[key] : none;
    if (mine != theirs) {
      throw InputError(name + ": '" + key + "' is " + shown(mine) + " where " + first_name + " has " + shown(theirs) +
                       ": not a shard of the same plan; merge the shards of one plan file");
    }
  }
}

bool serving(const Json& doc) {
  return doc.contains("kind") && doc["kind"] == "serving";
}

// The order one run ranks its rows in (plan/plan_search.cpp and plan/serving_search.cpp): a training plan's by its
// --rank-by column, a serving plan's those meeting the targets first by tokens/s per GPU; ties by candidate number.
bool ranks_before(const Json& a, const Json& b, const std::string& rank_by) {
  const auto index = [](const Json& row) { return row["index"].get<size_t>(); };
  if (rank_by.empty()) {  // serving
    if (a["meets_targets"] != b["meets_targets"]) return a["meets_targets"].get<bool>();
    const double x = a["tokens_per_s_per_gpu"], y = b["tokens_per_s_per_gpu"];
    return x != y ? x > y : index(a) < index(b);
  }
  const char* column = rank_by == "time" ? "time_s" : rank_by == "tokens" ? "tokens_per_s_per_gpu" : "mfu";
  const double sign = rank_by == "time" ? 1.0 : -1.0;
  const double x = sign * a[column].get<double>(), y = sign * b[column].get<double>();
  return x != y ? x < y : index(a) < index(b);
}

// The Pareto front of the shards' fronts (each point on the whole front is on its own shard's): no other point has
// as many tokens/s per user and per GPU and more of one.
std::vector<Json> front_of(const std::vector<Json>& points) {
  std::vector<Json> front;
  for (const Json& p : points) {
    const double user = p["tokens_per_s_per_user"], gpu = p["tokens_per_s_per_gpu"];
    const bool dominated = std::any_of(points.begin(), points.end(), [&](const Json& o) {
      const double other_user = o["tokens_per_s_per_user"], other_gpu = o["tokens_per_s_per_gpu"];
      return other_user >= user && other_gpu >= gpu && (other_user > user || other_gpu > gpu);
    });
    if (!dominated) front.push_back(p);
  }
  return front;
}

// Rows whose rank a merge knows exactly: a file that holds fewer rows than its shard simulated holds its shard's top
// rows, so the union ranks exactly as far as the shortest such file.
size_t exact_rows(const std::vector<Json>& docs, size_t all_rows) {
  size_t exact = all_rows;
  for (const Json& doc : docs) {
    const size_t ranked = doc["simulated"].get<size_t>() + doc.value("bounded", size_t{0});
    if (doc["rows"].size() < ranked) exact = std::min(exact, doc["rows"].size());
  }
  return exact;
}

void check_complete(const Json& merged, size_t refused, const std::string& first_name) {
  int64_t pruned = 0;
  for (const auto& [reason, count] : merged["pruned"].items()) pruned += count.get<int64_t>();
  const int64_t survivors = merged["candidates"].get<int64_t>() - pruned;
  const int64_t have =
      merged["simulated"].get<int64_t>() + merged.value("bounded", int64_t{0}) + static_cast<int64_t>(refused);
  if (have < survivors) {
    throw InputError("plan merge: the files hold " + std::to_string(have) + " of the " + std::to_string(survivors) +
                     " candidates that survive pruning in " + first_name +
                     "'s plan; merge the --json files of every shard");
  }
}

}  // namespace

Json merge_plan_documents(const std::vector<Json>& docs, const std::vector<std::string>& names, size_t top) {
  const Json& first = docs.front();
  std::map<size_t, std::string> seen;  // candidate -> the file that holds it
  std::vector<Json> rows, front_points;
  std::vector<std::string> failures;
  int64_t simulated = 0, bounded = 0, after_first_run = 0, meeting = 0, programs_simulated = 0, programs_reused = 0;
  for (size_t f = 0; f < docs.size(); ++f) {
    const Json& doc = docs[f];
    check_document(doc, names[f]);
    check_same_plan(doc, names[f], first, names.front());
    for (const Json& row : doc["rows"]) {
      const size_t index = row["index"];
      if (const auto [at, fresh] = seen.emplace(index, names[f]); !fresh) {
        throw InputError(names[f] + ": candidate " + std::to_string(index) + " is in " + at->second +
                         " too; merge each shard's file once");
      }
      rows.push_back(row);
    }
    if (doc.contains("front")) front_points.insert(front_points.end(), doc["front"].begin(), doc["front"].end());
    for (const Json& failure : doc["failures"]) failures.push_back(failure);
    simulated += doc["simulated"].get<int64_t>();
    bounded += doc.value("bounded", int64_t{0});
    after_first_run += doc.value("bounded_after_first_run", int64_t{0});
    if (doc.contains("meeting_targets")) meeting += doc["meeting_targets"].get<int64_t>();
    programs_simulated += doc["programs"]["simulated"].get<int64_t>();
    programs_reused += doc["programs"]["reused"].get<int64_t>();
  }
  const std::string rank_by = serving(first) ? "" : first.value("rank_by", "time");
  std::stable_sort(rows.begin(), rows.end(), [&](const Json& a, const Json& b) { return ranks_before(a, b, rank_by); });
  std::sort(failures.begin(), failures.end());
  Json merged;
  for (const auto& [key, value] : first.items()) {
    if (key != "rows" && key != "front") merged[key] = value;
  }
  merged["simulated"] = simulated;
  if (first.contains("bounded")) merged["bounded"] = bounded;
  merged.erase("bounded_after_first_run");
  if (after_first_run > 0) merged["bounded_after_first_run"] = after_first_run;
  if (serving(first)) merged["meeting_targets"] = meeting;
  merged["programs"] = {{"simulated", programs_simulated}, {"reused", programs_reused}};
  merged["failures"] = failures;
  check_complete(merged, failures.size(), names.front());
  std::set<size_t> on_front;
  const std::vector<Json> front = front_of(front_points);
  for (const Json& point : front) on_front.insert(point["index"].get<size_t>());
  const size_t shown_rows = std::min({top, rows.size(), exact_rows(docs, rows.size())});
  merged["rows"] = Json::array();
  for (size_t i = 0; i < shown_rows; ++i) {
    Json row = rows[i];
    const bool ranked = !serving(first) || row["meets_targets"].get<bool>();
    row["rank"] = ranked ? Json(i + 1) : Json(nullptr);
    if (serving(first)) row["front"] = on_front.count(row["index"].get<size_t>()) > 0;
    merged["rows"].push_back(std::move(row));
  }
  if (serving(first)) merged["front"] = sorted_front(front);
  return merged;
}

int run_plan_merge(const PlanMergeOptions& o) {
  if (o.top < 1) throw InputError("--top 0: show at least one row");
  std::vector<Json> docs;
  for (const std::string& file : o.files) {
    const std::string text = read_input_file(file, "plan JSON", kMaxPlanJsonBytes);
    try {
      docs.push_back(Json::parse(text));
    } catch (const Json::parse_error& error) {
      throw InputError(echo_path(file) + ": not JSON (" + std::string(error.what()) + ")");
    }
  }
  const Json merged = merge_plan_documents(docs, o.files, o.top);
  const bool is_serving = serving(merged);
  if (merged["rows"].size() < std::min<size_t>(o.top, merged["simulated"].get<size_t>())) {
    std::cerr << "plan merge: " << merged["rows"].size()
              << " rows ranked exactly: a file holds only its shard's top rows; write the shards with a larger --top "
                 "for more\n";
  }
  std::vector<std::pair<std::string, std::string>> outputs;
  if (!o.json_out.empty()) outputs.emplace_back(o.json_out, merged.dump(2) + "\n");
  if (!o.csv_out.empty()) outputs.emplace_back(o.csv_out, is_serving ? serving_csv(merged) : plan_csv(merged));
  if (o.json_out != "-" && o.csv_out != "-") {
    outputs.emplace_back("-", plan_summary(merged, true) + (is_serving ? serving_table(merged) : plan_table(merged)));
  }
  write_outputs(outputs);
  return 0;
}

void add_plan_merge_command(CLI::App& plan_app, Commands& commands) {
  auto o = std::make_shared<PlanMergeOptions>();
  CLI::App* merge = plan_app.add_subcommand(
      "merge", "Rank the --json files of a plan's shards (--shard i/N) together, as one unsharded run ranks them");
  merge->add_option("files", o->files, "The shards' --json files")->required()->check(CLI::ExistingFile);
  merge->add_option("--top", o->top, "Rows to show (and write)")->capture_default_str();
  merge->add_option("--json", o->json_out, "Write the merged rows as JSON to FILE, or -")->check(output_file_path());
  merge->add_option("--csv", o->csv_out, "Write the merged rows as CSV to FILE, or -")->check(output_file_path());
  commands.push_back({merge, [o] { return run_plan_merge(*o); }});
}

}  // namespace tpsim::cli
