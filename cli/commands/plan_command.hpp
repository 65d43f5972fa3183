// `tpsim plan SPEC.yaml`: search a training job's or a serving deployment's layouts, prune what cannot run, simulate
// the rest, rank them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/commands/command.hpp"

namespace tpsim::cli {

struct PlanCommandOptions {
  std::string plan;
  int jobs = 1;
  size_t top = 10;
  std::string json_out, csv_out;
  std::string rank_by;  // empty: time for a training plan, tokens for a serving plan
  std::string shard;
  std::string out_dir;  // journal.jsonl: the rows simulated so far; a rerun with the same folder resumes
  long explain = -1;    // print candidate N as a scenario file instead of searching
  bool no_cache = false;
  bool exhaustive = false;  // every survivor simulated, none bounded
  bool progress = true;
};

// Registers `tpsim plan` and its options; main runs it when the command line names it.
void add_plan_command(CLI::App& app, Commands& commands);
int run_plan_command(const PlanCommandOptions& options);

}  // namespace tpsim::cli
