// `tpsim sweep` and `tpsim merge`: run a scenario's sweep points in parallel worker processes with a
// resumable journal, a deterministic shard of the points, and the merge of shard outputs.
#pragma once

#include <string>
#include <vector>

#include "cli/commands/command.hpp"

namespace tpsim::cli {

struct SweepOptions {
  std::string scenario;
  std::string out_dir;
  int jobs = 1;
  std::string shard;  // "i/N" (1-based), or empty for all points
  bool progress = true;
  bool require_fit = false;  // a point whose variants do not all fit the GPU's HBM fails
};

// Returns the exit code: 0 when every point of the shard is done, 3 if some crashed.
int run_sweep(const SweepOptions& options);

// Joins the journals of shard folders into `out_dir`; every point must be present exactly once.
int merge_sweeps(const std::vector<std::string>& dirs, const std::string& out_dir);

struct Shard {
  size_t index = 0;  // 0-based
  size_t count = 1;
};
// Parses "i/N" with 1 <= i <= N; throws InputError with what is valid.
Shard parse_shard(const std::string& text);

// Registers `tpsim sweep` and `tpsim merge` and their options on `app`.
void add_sweep_commands(CLI::App& app, Commands& commands);

}  // namespace tpsim::cli
