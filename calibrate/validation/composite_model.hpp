// The simulator's side of a composite measurement (overlap, async_tp, dtp from real/): the same
// experiment built as rank programs, simulated with a cost model, and its times read off the same way
// real/ measures them (each part alone, together, the baseline). Async-TP pipelines and DTP chains are
// built by the code scenarios run (model/parallel/async_tp.*, model/parallel/dtp.*): the pipeline of tp_mode async
// against tp_mode sp's all-gather + GEMM or GEMM + reduce-scatter, the chain of GEMM modules of tp_mode dtp with the
// point's delta against delta 0 (blocking TP). real/'s NCCL pipelines issue one ncclSend/ncclRecv group per step, so
// each of their steps is an NCCL send/recv call paying NCCL's per-call latency. Not modelled (reported as skipped with
// the reason): fp8 GEMMs where the GPU or profile has no fp8 rate, async-TP chunk counts that do not divide.
#pragma once

#include <string>

#include "base/measurement.hpp"
#include "model/graph/layer_graph.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/engine/engine.hpp"

namespace tpsim::calibrate {

struct CompositePrediction {
  double time_s = 0;      // the overlapped / pipelined / delayed run
  double baseline_s = 0;  // its baseline, as the measurement defines it
  // overlap only
  double gemm_alone_s = 0;
  double partner_alone_s = 0;
  double gemm_overlapped_s = 0;

  double speedup() const { return baseline_s / time_s; }
};

// Empty when the simulator models the measurement's configuration on `cost`, else why not.
std::string composite_not_modelled(const Measurement& m, const sim::CostModel& cost);

// Predicts a composite measurement (InputError if composite_not_modelled says why).
CompositePrediction predict_composite(const Measurement& m, const sim::CostModel& cost,
                                      const sim::EngineOptions& options);

// How the engine runs a composite's programs: tpsim-real queues each iteration whole behind a spinning
// kernel before the GPU starts it, so its times hold no host launch or stream-wait time (as a CUDA
// graph's replay), only the GPU's own wait between streams.
sim::EngineOptions composite_engine_options(const sim::CostProfile& profile);

// The rank programs an async_tp or dtp point is predicted from: the measured run, or its baseline.
model::LayerGraph composite_graph(const Measurement& m, bool baseline);

}  // namespace tpsim::calibrate
