// `tpsim shard affinity | layout | apply`: affinity statistics of a checkpoint, a DTP layout from
// them, and the checkpoint permuted to that layout.
#pragma once

#include <cstdint>
#include <string>

#include "cli/commands/command.hpp"
#include "shard/layout_report.hpp"

namespace tpsim::cli {

struct ShardLayoutOptions {
  std::string affinity;
  std::string out = "-";
  shard::LayoutRequest request;
};

int run_shard_layout(const ShardLayoutOptions& options);

struct ShardAffinityOptions {
  std::string checkpoint;  // folder with config.json and the safetensors weights
  std::string tokens;
  bool text = false;
  int sequence_length = 256;
  int64_t max_tokens = 0;
  std::string out;
};

int run_shard_affinity(const ShardAffinityOptions& options);

struct ShardApplyOptions {
  std::string checkpoint;
  std::string layout;
  std::string out;  // a folder
};

int run_shard_apply(const ShardApplyOptions& options);

// Registers `tpsim shard layout | affinity | apply` and their options on `app`.
void add_shard_command(CLI::App& app, Commands& commands);

}  // namespace tpsim::cli
