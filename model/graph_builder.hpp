// Builds one TP rank's program for a stack of dense decoder layers under a variant (tp, sp, async, nocomm).
// Ignores: embedding and LM head, the backward pass, and QKV bias adds (fused into the GEMM).
#pragma once

#include "model/arch_spec.hpp"
#include "model/layer_graph.hpp"
#include "model/variant.hpp"
#include "model/workload.hpp"

namespace tpsim::model {

// Throws InputError when the variant cannot split this workload (chunks, token divisibility).
LayerGraph build_layer_graph(const ArchSpec& arch, const Workload& workload, int tp, const Variant& variant);

}  // namespace tpsim::model
