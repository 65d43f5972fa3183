// The GEMM shapes to measure: given on the command line ("MxNxK"), read from a shapes file, or taken
// from a scenario's layer graphs, exactly the per-rank (and, for async TP, per-chunk) shapes the
// simulator costs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpsim::real {

struct GemmCase {
  int64_t m = 0, n = 0, k = 0;
  int64_t per_rank_count = 0;  // how many of this shape one rank runs over all passes, variants and sweep points
  std::string example;         // one op that has it, e.g. "tp-async L0.ffn.up_proj.chunk1"
};

// "4096x8192x1024" (M x N x K: Y[M, N] = X[M, K] W[N, K]^T); throws InputError naming the form.
GemmCase parse_gemm_shape(const std::string& text);

// The shapes of a file with one "MxNxK" per line (anything after the first word is ignored, as are
// lines starting with #): what `tpsim-real shapes` prints. Throws InputError naming file:line.
std::vector<GemmCase> read_shapes_file(const std::string& path);

// One line per shape: "MxNxK  count  example", after a comment line naming the columns; readable by
// read_shapes_file.
std::string shapes_listing(const std::vector<GemmCase>& shapes);

// Every distinct GEMM shape of every variant of the scenario's passes (the primary pass, plus the
// first decode step of a generate workload), sorted by (m, n, k). A `chunks: auto` variant contributes
// the shapes of every chunk count its search tries. A swept scenario lists the shapes of every sweep
// point (input/sweep.hpp) once each, the example prefixed with its point's axis values and the count
// summed over the points. Defined in scenario_shapes.cpp, which only full builds (with the simulator) have.
std::vector<GemmCase> scenario_gemm_shapes(const std::string& scenario_file);

}  // namespace tpsim::real
