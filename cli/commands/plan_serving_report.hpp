// What `tpsim plan` writes for a serving plan: the summary line, the table (those meeting the targets ranked, then
// those missing one; the binding target; the Pareto front marked), the JSON and the CSV; and the pruning counts'
// text both kinds of plan share.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "input/plan_file.hpp"
#include "plan/serving_search.hpp"

namespace tpsim::cli {

// "N candidates: P pruned (memory 3, kv cache 5)".
std::string pruning_summary(size_t candidates, const std::map<std::string, int64_t>& pruned);

std::string serving_summary(const model::PlanSpec& spec, const plan::ServingResult& result, bool cache);
std::string serving_table(const plan::ServingResult& result, size_t top);
nlohmann::ordered_json serving_json(const model::PlanSpec& spec, const plan::ServingResult& result, size_t top);
std::string serving_csv(const plan::ServingResult& result, size_t top);

}  // namespace tpsim::cli
