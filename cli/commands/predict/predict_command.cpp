// Single-op predictions: the cost model and profile of a GPU preset, sizes, and a GEMM from the cost
// model directly (attention: predict_attention.cpp, collectives: predict_collective.cpp).
#include "cli/commands/predict/predict_command.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "base/size_checks.hpp"
#include "base/units.hpp"
#include "input/gpu_reader.hpp"
#include "input/presets.hpp"
#include "input/profile/profile_reader.hpp"
#include "sim/cost/power_limit.hpp"

namespace tpsim::cli {

sim::CostModel predict_cost_model(const PredictTarget& target) {
  const auto text = model::find_preset("gpus", target.gpu, "yaml");
  if (!text) {
    throw InputError("--gpu " + target.gpu +
                     ": unknown GPU preset; valid: " + model::join_names(model::preset_names("gpus")));
  }
  const model::YamlReader reader("presets/gpus/" + target.gpu + ".yaml");
  const sim::GpuSpec gpu = sim::read_gpu_spec(reader, reader.parse_text(std::string(*text)));
  if (target.calibration != "default") return sim::CostModel(gpu, sim::load_profile_file(target.calibration));
  std::optional<sim::CostProfile> profile = sim::default_profile(gpu.name);
  if (!profile) throw InputError("--gpu " + gpu.name + ": " + sim::no_default_profile_message(gpu.name));
  return sim::CostModel(gpu, *profile);
}

double parse_bytes(const std::string& text) {
  try {
    return model::parse_bytes(text);
  } catch (const InputError& error) {
    throw InputError(std::string("--bytes: ") + error.what());
  }
}

int predict_gemm(const PredictTarget& target, const GemmQuery& q) {
  if (const std::string why = model::gemm_shape_problem(q.m, q.n, q.k); !why.empty()) {
    throw InputError("--m " + std::to_string(q.m) + " --n " + std::to_string(q.n) + " --k " + std::to_string(q.k) +
                     ": " + why);
  }
  if (q.dtype != "bf16" && q.dtype != "fp8") throw InputError("--dtype " + q.dtype + ": valid: bf16, fp8");
  const sim::CostModel cost = predict_cost_model(target);
  const bool fp8 = q.dtype == "fp8";
  if (const std::string why = fp8 ? cost.fp8_unsupported_reason() : ""; !why.empty()) {
    throw InputError("--dtype fp8: " + why);
  }
  const model::GemmShape shape{q.m, q.n, q.k};
  const double bytes = model::gemm_bytes(shape, fp8 ? model::kFp8Bytes : model::kBf16Bytes, model::kBf16Bytes);
  const double seconds = cost.gemm_seconds(shape, bytes, fp8);
  const double flops = model::gemm_flops(shape);
  const sim::GemmTiling tiling = cost.gemm_tiling(shape);
  // Back to back for seconds, the power limiter engaged (sim/cost/power_limit.hpp): the rate a loop of them holds.
  const double sustained_clock = sim::back_to_back_clock_ratio(cost.gpu(), cost.profile());
  const double sustained_s = cost.at_clock(sustained_clock).gemm_seconds(shape, bytes, fp8);
  if (target.json) {
    nlohmann::ordered_json j;
    j["gpu"] = cost.gpu().name;
    j["m"] = q.m;
    j["n"] = q.n;
    j["k"] = q.k;
    j["dtype"] = q.dtype;
    j["time_s"] = seconds;
    j["tflops"] = flops / seconds / 1e12;
    j["tiles"] = tiling.tiles;
    j["split_k"] = tiling.splits;
    j["waves"] = tiling.waves;
    j["wave_efficiency"] = tiling.wave_efficiency;
    j["back_to_back_clock_ratio"] = sustained_clock;
    j["back_to_back_tflops"] = flops / sustained_s / 1e12;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "gemm M=" << q.m << " N=" << q.n << " K=" << q.k << " " << q.dtype << " on " << cost.gpu().name << ": "
            << model::format_number("%.3f", seconds * 1e6) << " us, "
            << model::format_number("%.1f", flops / seconds / 1e12) << " TFLOP/s (" << tiling.tiles
            << " tiles, split-K " << tiling.splits << ", " << tiling.waves << " waves, "
            << model::format_number("%.0f", tiling.wave_efficiency * 100) << "% wave efficiency)";
  if (sustained_s != seconds) {
    std::cout << "; back to back, under the power limit: " << model::format_number("%.1f", flops / sustained_s / 1e12)
              << " TFLOP/s (clock " << model::format_number("%.3f", sustained_clock) << ")";
  }
  std::cout << "\n";
  return 0;
}

namespace {

// The options of `tpsim predict collective`.
void add_collective_query_options(CLI::App& coll_app, CollectiveQuery& query) {
  coll_app.add_option("--topology", query.topology, "Topology")->capture_default_str();
  coll_app.add_option("--ranks", query.ranks, "GPUs in the group")->capture_default_str();
  coll_app.add_option("--nic-GBps", query.nic_GBps, "ib-rail: each GPU's NIC, one direction (default 50)");
  coll_app.add_option("--oversubscription", query.oversubscription,
                      "ib-rail: the fat tree's oversubscription above the rail switches (default 1: non-blocking)");
  coll_app.add_option("--kind", query.kind, "allreduce, allgather, reducescatter, alltoall or sendrecv")
      ->capture_default_str();
  coll_app.add_option("--bytes", query.bytes,
                      "Tensor size (all-reduce input, all-gather output, reduce-scatter input): 1048576, 64MiB, 2GB");
  coll_app.add_option("-b,--min-bytes", query.min_bytes, "Or a sweep, as nccl-tests: the smallest size");
  coll_app.add_option("-e,--max-bytes", query.max_bytes, "The largest size of the sweep");
  coll_app.add_option("-f,--step-factor", query.factor, "The sweep's size factor")->capture_default_str();
  coll_app
      .add_option("--algorithm", query.algorithm,
                  "nccl (what NCCL's tuner runs), auto (the fastest the profile has, custom kernels included), "
                  "ring, one_shot (oneshot), two_shot (twoshot), nvls or tree (all-reduce)")
      ->capture_default_str();
  coll_app
      .add_option("--protocol", query.protocol,
                  "NCCL_PROTO: auto (NCCL's choice; with --algorithm auto the fastest regime the profile has), "
                  "simple, ll or ll128")
      ->capture_default_str();
  coll_app
      .add_option("--as-called", query.as_called,
                  "How a call is timed: nccl-tests (calls launched back to back: the host's launch path where it is "
                  "longer than the device's time), torch (one call through torch.distributed on an idle GPU: the "
                  "host's work per call, then the device's) or graph (inside a CUDA graph: the device's time)")
      ->capture_default_str();
}

// The options of `tpsim predict attention`.
void add_attention_query_options(CLI::App& app, AttentionQuery& query) {
  app.add_option("--seq", query.queries, "Query tokens per sequence")->required();
  app.add_option("--kv-seq", query.keys, "Key tokens per sequence (default --seq; causal: the queries are the last)");
  app.add_option("--batch", query.batch, "Sequences")->capture_default_str();
  app.add_option("--heads", query.heads, "Query heads")->capture_default_str();
  app.add_option("--kv-heads", query.kv_heads, "Key/value heads (default --heads)");
  app.add_option("--head-dim", query.head_dim, "Head dimension")->capture_default_str();
  app.add_option("--mask", query.mask, "causal or none")->capture_default_str();
  app.add_option("--dtype", query.dtype, "bf16, or fp8 (the forward's Q, K and V in e4m3)")->capture_default_str();
  app.add_option("--kernel", query.kernel, "An attention kernel the profile knows (fa3, fa2, cudnn; default its own)");
}

}  // namespace

void add_predict_command(CLI::App& app, Commands& commands) {
  auto predict = std::make_shared<PredictTarget>();
  auto gemm_query = std::make_shared<GemmQuery>();
  auto collective_query = std::make_shared<CollectiveQuery>();
  CLI::App* predict_app = app.add_subcommand("predict", "Predict one op's time without a scenario");
  predict_app->require_subcommand(1);
  const auto add_target = [&](CLI::App* sub) {
    sub->add_option("--gpu", predict->gpu, "GPU preset")->capture_default_str();
    sub->add_option("--calibration", predict->calibration, "default (the GPU's profile) or a profile file")
        ->capture_default_str();
    sub->add_flag("--json", predict->json, "Print JSON (time_s and tflops, or algbw_GBps / busbw_GBps)");
  };
  CLI::App* gemm_app = predict_app->add_subcommand("gemm", "A bf16 GEMM of M x K times K x N");
  add_target(gemm_app);
  gemm_app->add_option("--m", gemm_query->m, "Rows of A and C")->required();
  gemm_app->add_option("--n", gemm_query->n, "Columns of B and C")->required();
  gemm_app->add_option("--k", gemm_query->k, "Inner dimension")->required();
  gemm_app->add_option("--dtype", gemm_query->dtype, "bf16, or fp8 (e4m3 operands, bf16 output)")
      ->capture_default_str();
  commands.push_back({gemm_app, [predict, gemm_query] { return predict_gemm(*predict, *gemm_query); }});
  auto attention_query = std::make_shared<AttentionQuery>();
  CLI::App* attention_app = predict_app->add_subcommand(
      "attention", "An attention kernel's forward and backward (FlashAttention's FLOP count)");
  add_target(attention_app);
  add_attention_query_options(*attention_app, *attention_query);
  commands.push_back(
      {attention_app, [predict, attention_query] { return predict_attention(*predict, *attention_query); }});
  CLI::App* coll_app =
      predict_app->add_subcommand("collective", "A collective alone on an idle node (nccl-tests algbw / busbw)");
  add_target(coll_app);
  add_collective_query_options(*coll_app, *collective_query);
  commands.push_back(
      {coll_app, [predict, collective_query] { return predict_collective(*predict, *collective_query); }});
}

}  // namespace tpsim::cli
