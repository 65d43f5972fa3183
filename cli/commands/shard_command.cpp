// Reads the affinity file, plans the layout, writes the JSON and a one-line summary.
#include "cli/commands/shard_command.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "cli/output_file.hpp"
#include "shard/affinity.hpp"
#include "shard/affinity_stats.hpp"
#include "shard/apply_layout.hpp"

namespace tpsim::cli {

int run_shard_layout(const ShardLayoutOptions& o) {
  const shard::AffinityTables tables = shard::read_affinity(o.affinity);
  const shard::LayoutReport report = shard::plan_layout(tables, o.request);
  write_output(o.out, report.json.dump(2) + "\n");
  const auto& objective = report.json["objective"];
  std::ostream& log = o.out == "-" ? std::cerr : std::cout;
  log << "layout over " << o.request.devices << " devices: " << (o.request.minimise ? "anti-optimised " : "optimised ")
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

int run_shard_affinity(const ShardAffinityOptions& o) {
  const shard::Checkpoint checkpoint = shard::read_checkpoint(o.checkpoint);
  const std::vector<int> tokens = shard::read_calibration_tokens(o.tokens, o.text, checkpoint.arch.vocab);
  const auto start = std::chrono::steady_clock::now();
  const shard::AffinityTables tables =
      shard::affinity_statistics(checkpoint, tokens, shard::AffinityOptions{o.sequence_length, o.max_tokens});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  shard::write_affinity(o.out, tables);
  const int64_t used = o.max_tokens > 0 ? std::min<int64_t>(o.max_tokens, static_cast<int64_t>(tokens.size()))
                                        : static_cast<int64_t>(tokens.size());
  std::cout << "affinity of " << checkpoint.arch.layers << " layers (" << checkpoint.arch.kv_heads << " KV groups, "
            << checkpoint.arch.intermediate << " neurons) over " << used - used % o.sequence_length << " tokens in "
            << model::format_number("%.1f", seconds) << " s -> " << o.out << "\n";
  return 0;
}

int run_shard_apply(const ShardApplyOptions& o) {
  const shard::Checkpoint checkpoint = shard::read_checkpoint(o.checkpoint);
  const shard::Layout layout = shard::read_layout_json(o.layout, checkpoint);
  const shard::Checkpoint result = shard::permuted(checkpoint, layout);
  // A permutation must not change the dense model: checked before anything is written. It only
  // reorders float32 sums inside the products (the tests see 3e-7 relative); a wrong permutation
  // moves logits by their own size. 1e-4 sits between, far from both.
  constexpr double kTolerance = 1e-4;
  const double difference = shard::logit_difference(checkpoint, result);
  if (!(difference <= kTolerance)) {
    throw InputError(o.layout + ": the permuted model's logits differ by " + model::format_number("%.2e", difference) +
                     " (relative) from the original's; nothing was written");
  }
  shard::write_checkpoint(o.out, result, o.checkpoint + "/config.json");
  std::cout << "permuted " << checkpoint.arch.layers << " layers over " << layout.devices
            << " devices; logits unchanged (max relative difference " << model::format_number("%.1e", difference)
            << ") -> " << o.out << "\n";
  return 0;
}

}  // namespace tpsim::cli
