// Reads the stdout of nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// alltoall_perf, sendrecv_perf) into measurements: one per size and placement (out-of-place,
// in-place), with the header's ranks, devices and NCCL version as provenance.
#pragma once

#include <string>
#include <vector>

#include "base/measurement.hpp"

namespace tpsim::calibrate {

// True when the text looks like an nccl-tests log (its "# nThread" or "# Collective test" header).
bool looks_like_nccl_tests_log(const std::string& text);

// Parses a log; `origin` (the file) names it in errors and tells the collective when the log's
// header does not ("all_gather_perf.log"). `gpu` is the preset the measurements are attributed to; empty:
// the preset of the GPU its device lines name ("NVIDIA H100 80GB HBM3" is h100-sxm), an error where they
// name none, or different GPUs. Sizes must be whole bytes, times positive and finite, #wrong a count or N/A.
std::vector<Measurement> parse_nccl_tests_log(const std::string& text, const std::string& origin,
                                              const std::string& gpu);

}  // namespace tpsim::calibrate
