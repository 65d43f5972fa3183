// Passes of a workload, and names and sizes of workload enums.
#include "model/graph/workload.hpp"

namespace tpsim::model {

bool fp8_gathers(const Workload& workload) {
  return workload.dtype == Dtype::kFp8 && per_tensor_scaled(workload.fp8_recipe) &&
         workload.implementation.fp8_all_gather;
}

int64_t sharded_tokens(const Workload& workload) {
  const bool decodes = workload.phase == Phase::kGenerate || workload.phase == Phase::kDecode;
  return decodes ? workload.batch : primary_pass(workload).tokens();
}

Pass primary_pass(const Workload& workload) {
  switch (workload.phase) {
    case Phase::kForward:
    case Phase::kPrefill:
      return Pass{workload.batch, workload.seq_len, 0};
    case Phase::kTrain:
      return Pass{workload.batch, workload.seq_len / workload.context_parallel.degree, 0};
    case Phase::kDecode:
      return Pass{workload.batch, 1, workload.context_len};
    case Phase::kGenerate:
      return Pass{workload.batch, workload.context_len, 0};
    case Phase::kOps:
      return Pass{1, 1, 0};
  }
  return Pass{workload.batch, workload.seq_len, 0};
}

Pass decode_pass(const Workload& workload, int64_t step) {
  return Pass{workload.batch, 1, workload.context_len + step};
}

double dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
    case Dtype::kFp8:  // activations and communication stay bf16
      return 2.0;
  }
  return 2.0;
}

std::string to_string(Phase phase) {
  return std::string(name_of(kPhaseNames, phase));
}

std::string to_string(Dtype dtype) {
  return std::string(name_of(kDtypeNames, dtype));
}

std::string to_string(Recompute recompute) {
  return std::string(name_of(kRecomputeNames, recompute));
}

const std::vector<std::pair<std::string, bool SaveList::*>>& save_list_items() {
  static const std::vector<std::pair<std::string, bool SaveList::*>> items = {
      {"matmul", &SaveList::matmul},         {"every_other_matmul", &SaveList::every_other_matmul},
      {"attention", &SaveList::attention},   {"reduce_scatter", &SaveList::reduce_scatter},
      {"all_reduce", &SaveList::all_reduce}, {"all_gather", &SaveList::all_gather},
      {"all_to_all", &SaveList::all_to_all}};
  return items;
}

std::vector<std::string> save_items(const SaveList& save) {
  std::vector<std::string> names;
  for (const auto& [name, flag] : save_list_items()) {
    if (save.*flag) names.push_back(name);
  }
  return names;
}

}  // namespace tpsim::model
