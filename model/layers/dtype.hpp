// The workload's number format.
#pragma once

namespace tpsim::model {

// bf16: every tensor in bf16. fp8: the linear layers' GEMMs take e4m3 operands (weights and the
// activations they read, quantised where they are produced) and write bf16, as Transformer Engine's
// fp8 recipes do; attention, activations and communication stay bf16.
enum class Dtype { kBf16, kFp8 };

}  // namespace tpsim::model
