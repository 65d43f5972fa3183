// What one step processes: phase, batch, sequence length, dtype, how many layers to simulate.
#pragma once

#include <cstdint>
#include <string>

namespace tpsim::model {

// forward: a training forward pass; prefill: an inference prompt pass. Both process batch x seq_len tokens.
enum class Phase { kForward, kPrefill };
enum class Dtype { kBf16 };

struct Workload {
  Phase phase = Phase::kForward;
  int64_t batch = 1;    // sequences per micro-batch
  int64_t seq_len = 1;  // tokens per sequence
  Dtype dtype = Dtype::kBf16;
  int64_t layers = 0;  // decoder layers to simulate (resolved from "all")

  int64_t tokens() const { return batch * seq_len; }
};

double dtype_bytes(Dtype dtype);
std::string to_string(Phase phase);
std::string to_string(Dtype dtype);

}  // namespace tpsim::model
