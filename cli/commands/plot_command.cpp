// Finds the plot script and the interpreter, then execs it.
#include "cli/commands/plot_command.hpp"

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "base/input_error.hpp"

namespace tpsim::cli {

std::string plot_script_path() {
  if (const char* env = std::getenv("TPSIM_PLOT_SCRIPT")) return env;
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed = exe.parent_path().parent_path() / "share" / "tpsim" / "tpsim_plot.py";
    if (std::filesystem::exists(installed)) return installed.string();
  }
  const std::string in_tree = std::string(TPSIM_SOURCE_DIR) + "/tools/tpsim_plot.py";
  if (std::filesystem::exists(in_tree)) return in_tree;
  throw InputError("cannot find tpsim_plot.py (looked in $TPSIM_PLOT_SCRIPT, share/tpsim beside the binary and " +
                   in_tree + ")");
}

int run_plot(const std::vector<std::string>& args) {
  const std::string script = plot_script_path();
  // Debian's interpreter has python3-matplotlib; a python3 earlier on PATH may not.
  std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (const char* env = std::getenv("TPSIM_PYTHON")) python = env;
  std::vector<std::string> argv_text = {python, script};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::cout.flush();
  ::execvp(python.c_str(), argv.data());
  throw InputError("cannot run " + python + " for tpsim plot: " + std::strerror(errno) +
                   " (install python3 and python3-matplotlib: tools/setup.sh does)");
}

void add_plot_command(CLI::App& app, Commands& commands) {
  CLI::App* plot_app = app.add_subcommand(
      "plot", "Plot sweep or run results (matplotlib): speedup curves or a time breakdown; see tpsim plot --help");
  plot_app->prefix_command();  // every argument, --help included, goes to the plot script
  plot_app->set_help_flag("");
  commands.push_back({plot_app, [plot_app] { return run_plot(plot_app->remaining()); }});
}

}  // namespace tpsim::cli
