// What `tpsim plan` writes for a training or a serving plan: the JSON document of its ranked rows, and the summary
// line, table and CSV made from that document, so that `tpsim plan merge` of shards' documents writes them byte for
// byte as one run would.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "input/plan_file.hpp"
#include "plan/plan_search.hpp"
#include "plan/serving_search.hpp"

namespace tpsim::cli {

// The plan's name, the fingerprint of its file, how it ranks, the pruning counts, the programs, the refusals and the
// top `top` rows (each with every number and its layout's fields).
nlohmann::ordered_json plan_json(const model::PlanSpec& spec, const plan::PlanResult& result, plan::RankBy rank_by,
                                 size_t top);
// The ranked table and the CSV of a plan_json document's rows.
std::string plan_table(const nlohmann::ordered_json& doc);
std::string plan_csv(const nlohmann::ordered_json& doc);

// "N candidates: P pruned (memory 3, kv cache 5), S simulated[, F refused by the simulator][, M meet TARGETS];
// programs simulated X, reused Y" of either kind of plan's document (or that every program was simulated).
std::string plan_summary(const nlohmann::ordered_json& doc, bool cache);
// The candidates, the pruning counts and each distinct reason (pruned_why), as both kinds of plan's JSON write them.
void add_pruning_json(nlohmann::ordered_json& doc, const plan::SearchTotals& totals);
// The rows simulated, the programs simulated and reused, and the refusals (`between` written after "simulated").
void add_simulation_json(nlohmann::ordered_json& doc, size_t simulated, const plan::SearchTotals& totals,
                         const nlohmann::ordered_json& between = nlohmann::ordered_json::object());

// A serving plan's document: those meeting the targets ranked, then those missing one; the binding target; the
// Pareto front marked, and the whole front.
nlohmann::ordered_json serving_json(const model::PlanSpec& spec, const plan::ServingResult& result, size_t top);
std::string serving_table(const nlohmann::ordered_json& doc);
std::string serving_csv(const nlohmann::ordered_json& doc);

// The document's "front": its points (index, layout, tokens/s per user and per GPU, whether it meets the targets),
// most tokens/s per user first, ties by candidate number.
nlohmann::ordered_json sorted_front(std::vector<nlohmann::ordered_json> points);

}  // namespace tpsim::cli
