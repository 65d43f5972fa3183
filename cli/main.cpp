// The tpsim command line: run, sweep, plan, merge, plot, predict, calibrate, validate and shard (see --help of each).
// Each command registers its own options (cli/commands/); main parses and runs the one named, and turns bad input
// into one line and exit 2.
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <new>

#include "base/input_error.hpp"
#include "cli/arguments.hpp"
#include "cli/commands/calibrate_command.hpp"
#include "cli/commands/command.hpp"
#include "cli/commands/plan_command.hpp"
#include "cli/commands/plot_command.hpp"
#include "cli/commands/predict/predict_command.hpp"
#include "cli/commands/run_command.hpp"
#include "cli/commands/shard_command.hpp"
#include "cli/commands/sweep_command.hpp"
#include "cli/commands/validate_command.hpp"
#include "cli/output_file.hpp"

namespace {

// Runs the command the command line named; every command's output ends in stdout, and a failed write there (a full
// disk, a closed pipe) is an error.
int run_parsed(const tpsim::cli::Commands& commands) {
  try {
    for (const tpsim::cli::Command& command : commands) {
      if (command.app->parsed()) {
        const int code = command.run();
        tpsim::cli::finish_stdout();
        return code;
      }
    }
    tpsim::cli::finish_stdout();
    return 0;
  } catch (const tpsim::InputError& error) {
    std::cerr << "tpsim: error: " << error.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // Too large for this machine's memory: the input's size, not a fault of tpsim.
    std::cerr << "tpsim: error: out of memory: the run needs more memory than the system gives; simulate fewer layers, "
                 "micro-batches or GPUs (docs/reliability.md)\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "tpsim: internal error: " << error.what() << "\n";
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A reader that closes stdout early (`--trace - | head`) fails the write (EPIPE), which ends stdout quietly
  // (cli/output_file.cpp), instead of killing tpsim with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "tpsim: simulate Transformer training steps and inference serving on modelled GPU clusters (tensor, sequence, "
      "pipeline, data and expert parallelism), calibrate its costs from measurements, and plan DTP layouts"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tpsim 0.1.0");
  tpsim::cli::Commands commands;
  tpsim::cli::add_run_command(app, commands);
  tpsim::cli::add_sweep_commands(app, commands);
  tpsim::cli::add_plan_command(app, commands);
  tpsim::cli::add_plot_command(app, commands);
  tpsim::cli::add_predict_command(app, commands);
  tpsim::cli::add_calibrate_command(app, commands);
  tpsim::cli::add_validate_command(app, commands);
  tpsim::cli::add_shard_command(app, commands);

  // A word that names no command is refused before CLI11 reads it as an argument (or prints the help for it).
  if (const std::optional<std::string> unknown = tpsim::cli::unknown_command(app, argc, argv)) {
    std::cerr << "tpsim: error: " << tpsim::echo_value(*unknown, 300) << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Help prints and exits 0; a usage error is one line like any other bad input.
    if (error.get_exit_code() == 0) return app.exit(error);
    std::cerr << "tpsim: error: " << tpsim::echo_value(error.what(), 300)
              << " (tpsim --help lists the commands and options)\n";
    return 2;
  }
  return run_parsed(commands);
}
