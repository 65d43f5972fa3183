// `tpsim shard layout`: an affinity file in, a DTP layout (JSON) out.
#pragma once

#include <string>

#include "shard/layout_report.hpp"

namespace tpsim::cli {

struct ShardLayoutOptions {
  std::string affinity;
  std::string out = "-";
  shard::LayoutRequest request;
};

int run_shard_layout(const ShardLayoutOptions& options);

}  // namespace tpsim::cli
