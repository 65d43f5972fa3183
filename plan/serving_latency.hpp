// A served request's latency under the plan's batching, in closed form from one simulated generate: the prefill of
// the batch and its mean decode step.
#pragma once

#include <cstdint>

#include "input/serving_plan.hpp"

namespace tpsim::plan {

struct ServedLatency {
  double ttft_s = 0;  // time to the first token
  double tpot_s = 0;  // mean time per output token after it
};

// `prefill_s`: the simulated prefill of `batch` prompts at once; `decode_s`: the simulated mean decode step of the
// batch over its output (each sequence's context from the prompt to the prompt and its output).
// Static: the batch admitted at once: the TTFT is its prefill, the TPOT its mean decode step.
// Continuous: a server at `batch` concurrent sequences in its steady state. Each sequence lives gen_len iterations,
// so batch / gen_len sequences start per iteration, and an iteration runs every sequence's decode step and their
// prefills at the batch prefill's rate per sequence (prefill_s / batch): TPOT = decode_s + prefill_s / gen_len. A
// new request waits half an iteration on average, then its own iteration runs its prefill (with the others that
// start in it, at least its own) beside the decode step: TTFT = TPOT / 2 + decode_s + max(1, batch / gen_len) x
// prefill_s / batch. Queueing beyond the iteration in flight (arrivals above the batch) is not modelled.
ServedLatency served_latency(model::Batching batching, double prefill_s, double decode_s, int64_t batch,
                             int64_t gen_len);

}  // namespace tpsim::plan
