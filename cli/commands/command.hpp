// A tpsim command as main sees it: the CLI11 subcommand its add_*_command function registered, with its options,
// and what runs when the command line named it.
#pragma once

#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace tpsim::cli {

struct Command {
  CLI::App* app = nullptr;  // the (sub)subcommand; it ran when app->parsed()
  std::function<int()> run;
};

// In the order main tries them: a subcommand's entry before its parent's.
using Commands = std::vector<Command>;

}  // namespace tpsim::cli
