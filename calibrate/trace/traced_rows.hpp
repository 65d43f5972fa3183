// A traced step written as rows (a kernel or fused block per row, with its duration read off a profiler trace,
// as the published TorchTitan layer is: async_tp_trace_layer.csv) and its comparison with a simulated variant:
// each row against the ops of GPU 0 the scenario names for it, and the step.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/run/scenario_run.hpp"

namespace tpsim::calibrate {

// One row: the variant it belongs to, its place in the step (0 for rows that are not a kernel: gaps, rates,
// the span), the kernel or block, its duration, and its kind (traced_row_kinds()).
struct TracedRow {
  std::string variant;
  int order = 0;
  std::string label;
  double duration_s = 0;
  std::string kind;
  size_t line = 0;  // in the file
};

struct TracedRows {
  std::string path;
  std::vector<TracedRow> rows;
};

// collective, layout_copy, gemm, memory, attention, pipeline (a fused block: kernels on several streams),
// gap (idle time between kernels, summed), rate (a reading that is no part of the step: not compared), span
// (the variant's whole step, first kernel's start to last kernel's end).
const std::vector<std::string>& traced_row_kinds();

// Whether `text` starts with the rows' header (variant,order,kernel_or_block,duration_ms,kind[,...]).
bool is_traced_rows_csv(const std::string& text);

// The rows of such a CSV; InputError at file:line for a bad duration, order or kind.
TracedRows read_traced_rows(const std::string& text, const std::string& path);

// What a row stands for in the simulation: the sum of the durations of GPU 0's ops named in `ops`, or the time
// from the start of the op `span_first` to the end of `span_last`; op names without their layer ("attn.core"
// is L0.attn.core, L1.attn.core, ...: summed over the layers).
struct RowOps {
  std::string variant;
  int order = 0;
  std::vector<std::string> ops;
  std::string span_first, span_last;
};

// The predicted seconds of one row; InputError naming the op when the variant ran no op of that name.
double predicted_row_s(const sim::VariantRun& variant, const RowOps& ops);

// One line of the comparison: the row, its prediction where the scenario names ops for it.
struct RowComparison {
  TracedRow row;
  std::optional<double> predicted_s;
};

// The variant's rows compared, the measured step (its span row, else the rows summed without rates) and the
// predicted one (the variant's time).
struct TracedVariantComparison {
  std::vector<RowComparison> rows;
  double measured_step_s = 0;
  bool step_from_span = false;
  double predicted_step_s = 0;
};

TracedVariantComparison compare_traced_rows(const TracedRows& rows, const sim::VariantRun& variant,
                                            const std::vector<RowOps>& mapping);

}  // namespace tpsim::calibrate
