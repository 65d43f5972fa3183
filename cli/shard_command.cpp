// Reads the affinity file, plans the layout, writes the JSON and a one-line summary.
#include "cli/shard_command.hpp"

#include <iostream>

#include "cli/output_file.hpp"
#include "model/units.hpp"
#include "shard/affinity.hpp"

namespace tpsim::cli {

int run_shard_layout(const ShardLayoutOptions& o) {
  const shard::AffinityTables tables = shard::read_affinity(o.affinity);
  const shard::LayoutReport report = shard::plan_layout(tables, o.request);
  write_output(o.out, report.json.dump(2) + "\n");
  const auto& objective = report.json["objective"];
  std::ostream& log = o.out == "-" ? std::cerr : std::cout;
  log << "layout over " << o.request.devices << " devices: "
      << (o.request.minimise ? "anti-optimised " : "optimised ")
      << model::format_number("%.4f", objective[o.request.minimise ? "anti_optimised" : "optimised"].get<double>())
      << ", contiguous " << model::format_number("%.4f", objective["contiguous"].get<double>());
  if (objective.contains("random")) {
    log << ", random " << model::format_number("%.4f", objective["random"]["mean"].get<double>()) << " (mean of "
        << objective["random"]["seeds"].get<int>() << ")";
  }
  log << ", " << (o.request.minimise ? "optimised " : "anti-optimised ")
      << model::format_number("%.4f", objective[o.request.minimise ? "optimised" : "anti_optimised"].get<double>())
      << "\n";
  return 0;
}

}  // namespace tpsim::cli
