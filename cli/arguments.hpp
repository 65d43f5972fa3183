// Command-line checks CLI11 does not make as tpsim wants them: named output paths, folders that are not stdout,
// counts with a readable range, and a command word that names no command.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace tpsim::cli {

// An output file: a named path, or - for stdout (an empty one would silently write nothing).
CLI::Validator output_file_path();
// An output folder: a named path other than - (a folder of files cannot go to stdout).
CLI::Validator output_folder_path();
// An integer from `min` to `max`, the range said as such.
CLI::Validator integer_in(long long min, long long max);

// The message for the first command word of argv that names no command where `app` (or the command it names)
// requires one ("unknown command 'plan'; commands: run, sweep, ..."); nullopt when every word names one, or the
// words end, or an option or a command's own argument comes first.
std::optional<std::string> unknown_command(const CLI::App& app, int argc, const char* const* argv);

}  // namespace tpsim::cli
