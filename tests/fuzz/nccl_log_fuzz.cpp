// Fuzz target: the nccl-tests log parser, then what calibrate infers of NCCL's choices from its rows.
#include "calibrate/sources/nccl_inference.hpp"
#include "calibrate/sources/nccl_tests_log.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/test_support.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  std::vector<calibrate::Measurement> rows =
      calibrate::parse_nccl_tests_log(std::string(data), "all_reduce_perf.log", "");
  static const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  calibrate::infer_nccl_choices(rows, gpu);
}
