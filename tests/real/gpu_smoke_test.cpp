// End-to-end check of tpsim-real on a GPU: every single-GPU subcommand (and, with two or more GPUs,
// the multi-GPU ones) runs on small problems, passes its correctness checks and writes JSON lines that
// calibrate/ reads. Without a usable device it prints why and exits 77, which CTest reports as skipped.
#include <filesystem>
#include <iostream>

#include "base/measurement.hpp"
#include "real/core/options.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/device_info.hpp"

namespace {

int failures = 0;

// Runs one tpsim-real command line and checks its exit code and its JSON lines.
std::vector<tpsim::calibrate::Measurement> run(std::vector<std::string> argv, const std::string& out) {
  argv.insert(argv.begin(), "tpsim-real");
  argv.insert(argv.end(), {"--json", out, "--samples", "5", "--warmup", "2"});
  const tpsim::real::RealOptions o = tpsim::real::parse_options(argv);
  int status = -1;
  try {
    if (o.command == "gemm") status = tpsim::real::run_gemm_bench(o, argv);
    if (o.command == "memcpy") status = tpsim::real::run_memcpy_bench(o, argv);
    if (o.command == "overlap") status = tpsim::real::run_overlap_bench(o, argv);
    if (o.command == "collective") status = tpsim::real::run_collective_bench(o, argv);
    if (o.command == "async-tp") status = tpsim::real::run_async_tp_bench(o, argv);
    if (o.command == "dtp") status = tpsim::real::run_dtp_bench(o, argv);
    if (o.command == "launch") status = tpsim::real::run_launch_bench(o, argv);
  } catch (const std::exception& error) {
    std::cerr << "FAILED: " << o.command << ": " << error.what() << "\n";
    ++failures;
    return {};
  }
  std::vector<tpsim::calibrate::Measurement> points = tpsim::calibrate::read_measurements(out);
  for (const auto& p : points) {
    if (!p.correct) std::cerr << "FAILED: " << o.command << ": a point failed its correctness check\n";
    failures += p.correct ? 0 : 1;
    // NVML's view with every point: recorded, or why not (printed: a GPU machine should have NVML).
    if (!p.gpu_state.recorded) std::cout << o.command << ": GPU state not recorded: " << p.gpu_state.why_not << "\n";
    if (!p.gpu_state.recorded && p.gpu_state.why_not.empty()) {
      std::cerr << "FAILED: " << o.command << ": a point carries no gpu_state\n";
      ++failures;
    }
    // Composites are queued behind a spin: each says how many samples were late.
    if (p.is_composite() && !p.details.contains("late_samples")) {
      std::cerr << "FAILED: " << o.command << ": a composite point lacks details.late_samples\n";
      ++failures;
    }
  }
  if (status != 0) {
    std::cerr << "FAILED: " << o.command << " exited " << status << "\n";
    ++failures;
  }
  return points;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string problem = tpsim::real::cuda_device_problem();
  if (!problem.empty()) {
    std::cout << "SKIPPED: " << problem << " (this test needs a GPU; the host-side tests cover the rest)\n";
    return 77;
  }
  const std::filesystem::path dir = argc > 1 ? argv[1] : "gpu_smoke";
  std::filesystem::create_directories(dir);
  auto out = [&dir](const char* name) { return (dir / name).string(); };

  const auto gemms = run({"gemm", "--shape", "1024x1024x1024", "--shape", "272x528x144"}, out("gemm.jsonl"));
  if (gemms.size() != 2) ++failures;
  run({"gemm", "--shape", "1024x1024x1024", "--dtype", "fp8"}, out("gemm_fp8.jsonl"));
  run({"memcpy", "--path", "device", "--path", "copy_kernel", "-b", "1MiB", "-e", "4MiB"}, out("memcpy.jsonl"));
  const auto chains = run({"launch", "--kernels", "200"}, out("launch.jsonl"));
  // Eager and queued chains, each on one stream and across two.
  if (chains.size() != 4 || chains[0].median_s <= 0 || chains[3].pattern != "cross_stream_queued") ++failures;
  const auto overlaps = run({"overlap", "--shape", "2048x2048x2048", "--partner", "copy_kernel", "--partner",
                             "memcpy_device", "--bytes", "64MiB"},
                            out("overlap.jsonl"));
  const auto held =
      run({"overlap", "--shape", "2048x2048x2048", "--partner", "copy_kernel", "--bytes", "64MiB", "--partner-first"},
          out("overlap_partner_first.jsonl"));
  for (const auto* set : {&overlaps, &held}) {
    for (const auto& o : *set) {
      // Sharing the GPU can only slow the GEMM down (10% below allowed: medians of 5 short samples).
      if (o.gemm_overlapped_s < 0.9 * o.gemm_alone_s) {
        std::cerr << "FAILED: overlap: the GEMM ran faster next to a copy than alone\n";
        ++failures;
      }
    }
  }
  if (tpsim::real::visible_device_count() >= 2) {
    const std::string n = std::to_string(tpsim::real::visible_device_count());
    const auto eager = run({"collective", "--op", "allreduce", "--op", "allgather", "--op", "alltoall", "-b", "1KiB",
                            "-e", "1MiB", "-f", "32"},
                           out("collective.jsonl"));
    // The same calls replayed from a CUDA graph: the device's time, which the host's launch path can only lengthen
    // (a quarter above the eager time allowed: medians of short samples).
    const auto graphed = run({"collective", "--op", "allreduce", "--op", "allgather", "--op", "alltoall", "-b", "1KiB",
                              "-e", "1MiB", "-f", "32", "--graph", "8"},
                             out("collective_graph.jsonl"));
    for (size_t i = 0; i < graphed.size(); ++i) {
      if (graphed[i].timed_as != "graph" || (i < eager.size() && graphed[i].median_s > 1.25 * eager[i].median_s)) {
        std::cerr << "FAILED: collective --graph: " << graphed[i].collective << " of " << graphed[i].bytes
                  << " B should be timed as graph and no slower than launched back to back\n";
        ++failures;
      }
    }
    // Every GPU pulling from the others at once: as many pulls per round as peers, each slot its owner's shard.
    const auto pulls = run({"memcpy", "--path", "peer_all_ranks", "-b", "1MiB", "-e", "4MiB"}, out("pulls.jsonl"));
    if (pulls.empty() || pulls[0].ranks != tpsim::real::visible_device_count() || !pulls[0].correct) ++failures;
    run({"async-tp", "--pattern", "allgather_gemm", "--pattern", "gemm_reducescatter", "--transport", "nccl",
         "--transport", "copy_engine", "--chunks", n, "--shape", "1024x1024x512"},
        out("async_tp.jsonl"));
    const auto dtp_points =
        run({"dtp", "--delta", "0", "--delta", "1", "--modules", "4", "--shape", "512x1024x512"}, out("dtp.jsonl"));
    // delta 0 is blocking TP timed against itself: a speedup of 1 up to noise (a third either way allowed).
    if (dtp_points.size() != 2 || dtp_points[0].speedup() < 0.75 || dtp_points[0].speedup() > 1.33) {
      std::cerr << "FAILED: dtp --delta 0 should time blocking TP twice\n";
      ++failures;
    }
  } else {
    std::cout << "one GPU: the collective, async-tp and dtp runs need two and were not run\n";
  }
  std::cout << (failures == 0 ? "all GPU checks passed\n" : std::to_string(failures) + " GPU check(s) failed\n");
  return failures == 0 ? 0 : 1;
}
