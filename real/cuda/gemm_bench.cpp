// tpsim-real gemm: each shape is checked once against sampled float64 references, then timed over
// rotating input sets that span more than twice the L2.
#include <memory>

#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/event_timer.hpp"
#include "real/cuda/gemm_buffers.hpp"
#include "real/cuda/gemm_check.hpp"
#include "real/cuda/gpu_session.hpp"

namespace tpsim::real {

int run_gemm_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  GpuSession gpu(o, arguments, chosen_device(o));
  MeasurementLog log(o.json_out);
  TextTable table({"M", "N", "K", "dtype", "median us", "p10 us", "p90 us", "TFLOP/s", "noise %", "check"});
  bool all_correct = true;
  for (const GemmCase& shape : o.shapes) {
    std::unique_ptr<GemmOp> made;
    try {
      made = std::make_unique<GemmOp>(gpu.lt(), shape, element_type(o.dtype), gpu.workspace(), gpu.workspace_bytes());
    } catch (const NoGemmAlgorithm& error) {
      // Not a failure of the run: the shape cannot be run in this type (no point is written).
      table.add_row({std::to_string(shape.m), std::to_string(shape.n), std::to_string(shape.k), o.dtype, "-", "-", "-",
                     "-", "-", "no algorithm"});
      continue;
    }
    const GemmOp& op = *made;
    std::vector<GemmBuffers> sets = make_gemm_sets(
        op, gpu.device(), gpu.rotation_sets(op.x_bytes() + op.w_bytes() + op.y_bytes()), o.seed, gpu.stream());
    // Poison the output, run once, check every sampled element was written and is right.
    TPSIM_CUDA(cudaMemsetAsync(sets[0].y.get(), 0xFF, op.y_bytes(), gpu.stream()));
    op.run(sets[0].x.get(), sets[0].w.get(), sets[0].y.get(), gpu.stream());
    TPSIM_CUDA(cudaStreamSynchronize(gpu.stream()));
    PointContext c{gpu.gpu(), gpu.provenance_json(), {}, 1, 0, true, {}, std::nullopt};
    c.check_error = check_gemm(op, sets[0].x.get(), sets[0].w.get(), sets[0].y.get(), o.seed);
    c.correct = within(c.check_error, kBf16Tolerance);
    all_correct = all_correct && c.correct;
    GpuStateSampler gpu_state = sample_gpu_state({gpu.device()});
    const TimedRun run = time_launches(gpu.stream(), o.timing, [&](int i) {
      const GemmBuffers& b = sets[static_cast<size_t>(i) % sets.size()];
      op.run(b.x.get(), b.w.get(), b.y.get(), gpu.stream());
    });
    c.gpu_state = gpu_state.finish();
    c.timing = summarize(run.seconds);
    c.launches_per_sample = run.launches;
    const calibrate::Measurement m = gemm_point(c, shape, o.dtype);
    log.add(m);
    table.add_row({std::to_string(shape.m), std::to_string(shape.n), std::to_string(shape.k), o.dtype,
                   fixed(c.timing.median * 1e6, 1), fixed(c.timing.p10 * 1e6, 1), fixed(c.timing.p90 * 1e6, 1),
                   fixed(m.tflops(), 1), fixed(100 * c.timing.spread(), 1), c.correct ? "ok" : "FAILED"});
  }
  log.finish();
  print_report(o,
               "GEMMs on " + gpu.facts().name + " (" + std::to_string(gpu.facts().sm_count) + " SMs)\n" + table.str());
  return all_correct ? 0 : 1;
}

}  // namespace tpsim::real
