// `tpsim plan merge A.json B.json ...`: the `--json` files of a plan's shards (`tpsim plan --shard i/N`) ranked
// together exactly as one unsharded run ranks them (the same rows in the same order, a serving plan's Pareto front
// over the union), written as that run's table, JSON and CSV.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands/command.hpp"

namespace tpsim::cli {

struct PlanMergeOptions {
  std::vector<std::string> files;
  size_t top = 10;
  std::string json_out, csv_out;
};

// The merged document of the shards' documents (`names` for the errors, one per document); located errors for
// documents of different plans, a candidate in two documents, or shards missing.
nlohmann::ordered_json merge_plan_documents(const std::vector<nlohmann::ordered_json>& docs,
                                            const std::vector<std::string>& names, size_t top);

int run_plan_merge(const PlanMergeOptions& options);

// Registers `merge` under `tpsim plan`, before the plan command's own entry (main runs a subcommand's entry first).
void add_plan_merge_command(CLI::App& plan_app, Commands& commands);

}  // namespace tpsim::cli
