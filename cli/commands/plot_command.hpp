// `tpsim plot`: hands its arguments to the matplotlib script tools/tpsim_plot.py (installed under
// share/tpsim), run with Debian's python3; the C++ side only writes the data.
#pragma once

#include <string>
#include <vector>

#include "cli/commands/command.hpp"

namespace tpsim::cli {

// Replaces the process with python3 running the plot script; returns only on failure.
int run_plot(const std::vector<std::string>& args);

// Where the script is: $TPSIM_PLOT_SCRIPT, next to an installed binary, or in the source tree.
std::string plot_script_path();

// Registers `tpsim plot` on `app`: every argument goes to the plot script.
void add_plot_command(CLI::App& app, Commands& commands);

}  // namespace tpsim::cli
