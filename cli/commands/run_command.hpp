// `tpsim run`: simulate every variant of a scenario (every point of its sweep) and report it: the table,
// and on request JSON, CSV, a Chrome trace, a time breakdown, the memory by part and the critical path.
#pragma once

#include <string>

#include "cli/commands/command.hpp"

namespace tpsim::cli {

struct RunOptions {
  std::string scenario;
  std::string json_out;
  std::string trace_out;
  std::string trace_ranks = "1";  // the GPUs of each pass the trace shows: a count from the first, or "all"
  std::string csv_out;
  bool quiet = false;
  bool require_fit = false;
  bool breakdown = false;
  bool memory = false;  // the memory per GPU by part (cli/report/report_memory.hpp)
  bool critical_path = false;
  bool no_symmetry = false;  // simulate every data-parallel replica (sim::Symmetry::kEveryMember)
  bool progress = true;      // on stderr, when it is a terminal and the run lasts over two seconds
};

int run_command(const RunOptions& options);

// Registers `tpsim run` and its options on `app`.
void add_run_command(CLI::App& app, Commands& commands);

}  // namespace tpsim::cli
