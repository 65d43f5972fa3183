// CLI11 validators with tpsim's messages, and the search for a command word that names no command.
#include "cli/arguments.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <vector>

namespace tpsim::cli {

CLI::Validator output_file_path() {
  return {[](const std::string& path) {
            return path.empty() ? std::string("an empty path names no file; give a file, or - for stdout")
                                : std::string();
          },
          "FILE|-"};
}

CLI::Validator output_folder_path() {
  return {[](const std::string& path) {
            if (path.empty()) return std::string("an empty path names no folder; give a folder");
            if (path == "-") {
              return std::string("'-' is standard output, and this writes a folder of files; give a folder");
            }
            return std::string();
          },
          "DIR"};
}

CLI::Validator integer_in(long long min, long long max) {
  return {[min, max](const std::string& text) {
            long long value = 0;
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (error == std::errc() && end == text.data() + text.size() && value >= min && value <= max) {
              return std::string();
            }
            std::string range = max < std::numeric_limits<long long>::max()
                                    ? "from " + std::to_string(min) + " to " + std::to_string(max)
                                    : "of at least " + std::to_string(min);
            return "must be an integer " + range.append(", got '").append(text).append("'");
          },
          "INT"};
}

std::optional<std::string> unknown_command(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* level = &app;
  std::string path;  // the command words so far
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word.front() == '-') return std::nullopt;
    const std::vector<const CLI::App*> commands = level->get_subcommands([](const CLI::App*) { return true; });
    const auto named = std::find_if(commands.begin(), commands.end(),
                                    [&](const CLI::App* command) { return command->check_name(word); });
    if (named != commands.end()) {
      level = *named;
      path += " " + word;
      continue;
    }
    if (level->get_require_subcommand_min() == 0) return std::nullopt;  // the command's own argument
    std::string names;
    for (const CLI::App* command : commands) names.append(names.empty() ? "" : ", ").append(command->get_name());
    const std::string parent = path.empty() ? "" : path.substr(1);  // "predict" for tpsim predict's commands
    std::string message = "unknown command '";
    if (!parent.empty()) message.append(parent).append(" ");
    message.append(word).append("'; ");
    if (!parent.empty()) message.append(parent).append("'s ");
    return message.append("commands: ").append(names).append(" (tpsim").append(path).append(" --help describes them)");
  }
  return std::nullopt;
}

}  // namespace tpsim::cli
