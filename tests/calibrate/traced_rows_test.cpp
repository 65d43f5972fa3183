// A traced step written as rows (the published TorchTitan layer's CSV): the reader's checks, and each row
// compared with the sum (or span) of the ops of GPU 0 that the scenario names for it.
#include <catch2/catch.hpp>
#include <cmath>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "calibrate/trace/traced_rows.hpp"
#include "model/scenario.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

const std::string kHeader = "variant,order,kernel_or_block,duration_ms,kind,notes\n";

std::string refusal(const std::string& text) {
  try {
    calibrate::read_traced_rows(text, "rows.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// GPU 0's ops named L0.`name` (the scenario has one layer) of every pass: their durations summed, and the span from
// the first one's start to the last one's end.
struct OpTimes {
  double summed = 0, first_start = INFINITY, last_end = -INFINITY;
};
OpTimes op_times(const sim::VariantRun& v, const std::string& name) {
  OpTimes t;
  for (const sim::PassTrace& pass : v.passes) {
    for (const sim::OpSpan& span : pass.timeline.spans) {
      const std::string& full = pass.graph.op(span.op).name;
      if (span.rank != 0 || full != "L0." + name) continue;
      t.summed += span.end_s - span.start_s;
      t.first_start = std::min(t.first_start, span.start_s);
      t.last_end = std::max(t.last_end, span.end_s);
    }
  }
  return t;
}

}  // namespace

TEST_CASE("traced rows are read with their variant order duration and kind") {
  const calibrate::TracedRows rows = calibrate::read_traced_rows(
      kHeader +
          "sp,1,NCCL all-gather,5.49,collective,\"a note, quoted\"\nsp,,gaps (total),1.6,gap,\nsp,,span,82.56,span,\n",
      "rows.csv");
  REQUIRE(rows.rows.size() == 3);
  CHECK(rows.rows[0].variant == "sp");
  CHECK(rows.rows[0].order == 1);
  CHECK(rows.rows[0].label == "NCCL all-gather");
  CHECK(rows.rows[0].duration_s == Approx(5.49e-3));
  CHECK(rows.rows[0].kind == "collective");
  CHECK(rows.rows[1].order == 0);  // a gap is no kernel of the step's order
  CHECK(rows.rows[2].line == 4);
}

TEST_CASE("traced rows with a bad kind duration order or header are refused at their line") {
  CHECK_THAT(refusal(kHeader + "sp,1,x,1.0,kernel,\n"), Contains("rows.csv:2: kind 'kernel' is not one of collective"));
  CHECK_THAT(refusal(kHeader + "sp,1,x,-1,gemm,\n"), Contains("rows.csv:2: duration_ms must be a finite number"));
  CHECK_THAT(refusal(kHeader + "sp,1,x,nan,gemm,\n"), Contains("rows.csv:2: duration_ms must be a finite number"));
  CHECK_THAT(refusal(kHeader + "sp,1,x,1.0,gemm,\nsp,0,y,1.0,gemm,\n"), Contains("rows.csv:3: column 'order'"));
  CHECK_THAT(refusal(kHeader + ",1,x,1.0,gemm,\n"), Contains("rows.csv:2: empty variant"));
  CHECK_THAT(refusal("variant,kernel,ms\n"), Contains("rows.csv:1: a traced step's rows start with the header"));
  CHECK_FALSE(calibrate::is_traced_rows_csv("{\"traceEvents\": []}"));
}

TEST_CASE("the published traced layer's rows compare with the ops of GPU 0 the scenario names for them") {
  const std::string csv = std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/public/async_tp_trace_layer.csv";
  const calibrate::TracedRows rows =
      calibrate::read_traced_rows(read_input_file(csv, "rows", model::kMaxTextFileBytes), csv);
  const model::Scenario scenario = model::load_scenario(std::string(TPSIM_SOURCE_DIR) +
                                                        "/scenarios/published/torchtitan-llama3-70b-traced-layer.yaml");
  const sim::ScenarioRun run = sim::run_scenario(scenario);
  REQUIRE(run.variants.size() == 2);
  const std::vector<calibrate::RowOps> mapping = {
      {"sp", 3, {"attn.qkv_proj.q", "attn.qkv_proj.k", "attn.qkv_proj.v"}, "", ""},
      {"async", 1, {}, "attn.qkv_proj.ag.barrier", "attn.qkv_proj.ag.closing_barrier"}};
  const calibrate::TracedVariantComparison sp = calibrate::compare_traced_rows(rows, run.variants[0], mapping);
  const calibrate::TracedVariantComparison async = calibrate::compare_traced_rows(rows, run.variants[1], mapping);
  // Row 3 of sp is the three projections' durations summed; row 1 of async the fused block's span.
  REQUIRE(sp.rows.size() == 18);  // 17 kernels and the gaps; the span row is the step
  REQUIRE(sp.rows[2].predicted_s.has_value());
  CHECK(*sp.rows[2].predicted_s == Approx(op_times(run.variants[0], "attn.qkv_proj.q").summed +
                                          op_times(run.variants[0], "attn.qkv_proj.k").summed +
                                          op_times(run.variants[0], "attn.qkv_proj.v").summed));
  CHECK_FALSE(sp.rows[0].predicted_s.has_value());  // no ops named for row 1 here
  REQUIRE(async.rows[0].predicted_s.has_value());
  CHECK(*async.rows[0].predicted_s == Approx(op_times(run.variants[1], "attn.qkv_proj.ag.closing_barrier").last_end -
                                             op_times(run.variants[1], "attn.qkv_proj.ag.barrier").first_start));
  // The step: the span rows (the published whole spans), against each variant's simulated time.
  CHECK(sp.step_from_span);
  CHECK(sp.measured_step_s == Approx(82.56e-3));
  CHECK(async.measured_step_s == Approx(63.77e-3));
  CHECK(sp.predicted_step_s == run.variants[0].metrics.time_s);
  // An op the variant never ran is named in the refusal.
  CHECK_THROWS_WITH(calibrate::compare_traced_rows(rows, run.variants[0], {{"sp", 1, {"attn.nothing"}, "", ""}}),
                    Contains("sp row 1: variant sp ran no op named 'attn.nothing' on GPU 0"));
}
