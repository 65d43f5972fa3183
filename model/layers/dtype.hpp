// The workload's number format.
#pragma once

#include "base/enum_names.hpp"

namespace tpsim::model {

// bf16: every tensor in bf16. fp8: the linear layers' GEMMs take e4m3 operands (weights and the
// activations they read, quantised where they are produced) and write bf16, as Transformer Engine's
// fp8 recipes do; attention, activations and communication stay bf16.
enum class Dtype { kBf16, kFp8 };
// workload.dtype and workload.attention_dtype, in the order their messages list them.
inline constexpr EnumName<Dtype> kDtypeNames[] = {
    {Dtype::kBf16, "bf16"},
    {Dtype::kFp8, "fp8"},
};

}  // namespace tpsim::model
