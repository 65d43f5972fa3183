// Reads the affinity file, plans the layout, writes the JSON and a one-line summary.
#include "cli/commands/shard_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <memory>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "base/units.hpp"
#include "cli/arguments.hpp"
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

namespace {

void add_shard_layout(CLI::App& shard_app, Commands& commands) {
  auto shard_layout = std::make_shared<ShardLayoutOptions>();
  CLI::App* layout_app = shard_app.add_subcommand(
      "layout", "Maximise the co-located affinity of an affinity file (exact balanced assignments, coordinate ascent)");
  layout_app->add_option("affinity", shard_layout->affinity, "Affinity safetensors (up.{i} [G, I], down.{i} [I, G])")
      ->required()
      ->check(CLI::ExistingFile);
  layout_app->add_option("--devices", shard_layout->request.devices, "Devices (TP degree)")
      ->required()
      ->check(integer_in(1, model::kMaxGroupRanks));
  layout_app->add_flag("--minimise", shard_layout->request.minimise, "Write the anti-optimised layout instead");
  layout_app->add_flag("--raw", shard_layout->request.raw, "Keep raw affinity units (default: unit mass per table)");
  layout_app->add_option("--seed", shard_layout->request.seed, "First seed of the random layouts")
      ->capture_default_str();
  layout_app->add_option("--random-seeds", shard_layout->request.random_seeds, "Random layouts to compare with")
      ->capture_default_str()
      ->check(integer_in(0, std::numeric_limits<int>::max()));
  layout_app->add_option("--restarts", shard_layout->request.restarts, "Extra optimiser starts from random layouts")
      ->capture_default_str()
      ->check(integer_in(0, std::numeric_limits<int>::max()));
  layout_app->add_option("-o,--out", shard_layout->out, "Layout JSON, or - for stdout")
      ->capture_default_str()
      ->check(output_file_path());
  commands.push_back({layout_app, [shard_layout] { return run_shard_layout(*shard_layout); }});
}

void add_shard_affinity(CLI::App& shard_app, Commands& commands) {
  auto shard_affinity = std::make_shared<ShardAffinityOptions>();
  CLI::App* affinity_app =
      shard_app.add_subcommand("affinity", "Affinity statistics of a checkpoint over calibration tokens (CPU)");
  affinity_app->add_option("checkpoint", shard_affinity->checkpoint, "Folder with config.json and model.safetensors")
      ->required()
      ->check(CLI::ExistingDirectory);
  affinity_app->add_option("--tokens", shard_affinity->tokens, "Calibration token ids: little-endian uint32")
      ->required()
      ->check(CLI::ExistingFile);
  affinity_app->add_flag("--text", shard_affinity->text,
                         "--tokens is a text file; its bytes are the token ids (no tokenizer: a byte fallback)");
  affinity_app->add_option("--seq-len", shard_affinity->sequence_length, "Tokens per causal sequence")
      ->capture_default_str()
      ->check(integer_in(1, std::numeric_limits<int>::max()));
  affinity_app->add_option("--max-tokens", shard_affinity->max_tokens, "Use at most this many tokens (0: all)")
      ->capture_default_str()
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()));
  affinity_app->add_option("-o,--out", shard_affinity->out, "Affinity safetensors")
      ->required()
      ->check(output_file_path());
  commands.push_back({affinity_app, [shard_affinity] { return run_shard_affinity(*shard_affinity); }});
}

void add_shard_apply(CLI::App& shard_app, Commands& commands) {
  auto shard_apply = std::make_shared<ShardApplyOptions>();
  CLI::App* apply_app =
      shard_app.add_subcommand("apply", "Permute a checkpoint so each device's TP shard holds its layout's share");
  apply_app->add_option("checkpoint", shard_apply->checkpoint, "Folder with config.json and model.safetensors")
      ->required()
      ->check(CLI::ExistingDirectory);
  apply_app->add_option("layout", shard_apply->layout, "Layout JSON from tpsim shard layout")
      ->required()
      ->check(CLI::ExistingFile);
  apply_app->add_option("-o,--out", shard_apply->out, "Output folder (config.json, model.safetensors in float32)")
      ->required();
  commands.push_back({apply_app, [shard_apply] { return run_shard_apply(*shard_apply); }});
}

}  // namespace

void add_shard_command(CLI::App& app, Commands& commands) {
  CLI::App* shard_app = app.add_subcommand("shard", "DTP layouts: which KV groups and FFN neurons share a device");
  shard_app->require_subcommand(1);
  add_shard_layout(*shard_app, commands);
  add_shard_affinity(*shard_app, commands);
  add_shard_apply(*shard_app, commands);
}

}  // namespace tpsim::cli
