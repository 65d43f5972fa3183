// The sequence-parallel strategies: sp (an all-gather before each column-parallel GEMM, a
// reduce-scatter after each row-parallel one) and async TP (the same, decomposed into chunked pipelines).
#pragma once

#include <memory>

#include "model/parallel/tp_strategy.hpp"

namespace tpsim::model {

std::unique_ptr<TpStrategy> make_sequence_parallel_strategy(const Variant& variant);

}  // namespace tpsim::model
