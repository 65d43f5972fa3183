// The tpsim-real subcommands. Each measures, prints a readable table, writes --json lines, and
// returns the process exit code (0, or 1 when a point failed its correctness check).
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "real/core/options.hpp"

namespace tpsim::real {

// The readable table goes to stdout, or to stderr when the JSON lines do.
inline void print_report(const RealOptions& options, const std::string& text) {
  (options.json_out == "-" ? std::cerr : std::cout) << text;
}

int run_gemm_bench(const RealOptions& options, const std::vector<std::string>& arguments);
int run_collective_bench(const RealOptions& options, const std::vector<std::string>& arguments);
int run_memcpy_bench(const RealOptions& options, const std::vector<std::string>& arguments);
// memcpy --path peer_all_ranks: every GPU of the process pulling from the others at once.
int run_all_ranks_pull_bench(const RealOptions& options, const std::vector<std::string>& arguments);
int run_overlap_bench(const RealOptions& options, const std::vector<std::string>& arguments);
int run_async_tp_bench(const RealOptions& options, const std::vector<std::string>& arguments);
int run_dtp_bench(const RealOptions& options, const std::vector<std::string>& arguments);
int run_launch_bench(const RealOptions& options, const std::vector<std::string>& arguments);

}  // namespace tpsim::real
