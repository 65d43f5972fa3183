// Builds one TP rank's program for a stack of dense decoder layers under a variant (tp, sp, async,
// dtp, nocomm) for one pass (a forward / prefill over whole sequences, one decode step, or a training
// step's micro-batches). With workload.whole_model a forward pass has the embedding, LM head and loss, an
// inference pass the embedding, LM head and sampling.
// Ignores: QKV bias adds (fused into the GEMM).
#pragma once

#include "model/graph/layer_graph.hpp"
#include "model/graph/variant.hpp"
#include "model/graph/workload.hpp"
#include "model/layers/arch_spec.hpp"

namespace tpsim::model {

// The graph of the workload's primary pass (see primary_pass()).
LayerGraph build_layer_graph(const ArchSpec& arch, const Workload& workload, int tp, const Variant& variant);

// The graph of any pass of the workload. Throws InputError when the variant cannot split the pass
// (chunks, token divisibility).
LayerGraph build_pass_graph(const ArchSpec& arch, const Workload& workload, const Pass& pass, int tp,
                            const Variant& variant);

}  // namespace tpsim::model
