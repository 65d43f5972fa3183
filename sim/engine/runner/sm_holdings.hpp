// The SMs each simulated GPU's running comm kernels hold, and the compute-bound kernels beside them that share those
// SMs (sim/cost/sm_sharing.hpp): which do, and the tail a GEMM that did pays at its end.
#pragma once

#include <optional>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "sim/cost/cost_model.hpp"

namespace tpsim::sim {

class SmHoldings {
 public:
  // `ranks`: the simulated GPUs.
  SmHoldings(const model::LayerGraph& graph, const CostModel& cost, int ranks);

  // Per GPU: the SMs its running comm kernels hold.
  const std::vector<int>& comm_sms() const { return comm_sms_; }

  // Comm kernels on `rank` take (`delta` > 0) or give back SMs: a compute-bound kernel running there with CTAs on
  // the SMs taken shares them from then on.
  void change_comm_sms(int rank, int delta);

  // Compute-bound op `id` starts on `rank`: it shares SMs if comm kernels hold some its CTAs reach.
  void start_compute(model::OpId id, int rank);

  // Compute-bound op `id` is done on `rank`: whether it shared SMs while it ran.
  bool end_compute(model::OpId id, int rank);

  // The tail op `id`, cost `k` on its GPU, pays at its end for having shared SMs (0 but for GEMMs).
  double shared_tail_s(model::OpId id, const KernelCost& k) const;

 private:
  struct Running {
    model::OpId op = 0;
    bool shared = false;  // comm kernels held some of the SMs its CTAs reach while it ran
  };

  // Whether compute-bound op `id` has CTAs on the SMs the comm kernels running on `rank` hold.
  bool spills(model::OpId id, int rank) const;
  // A GEMM's tiling, computed at its first use (other kernels: none).
  const GemmTiling& tiling(model::OpId id) const;

  const model::LayerGraph& graph_;
  const CostModel& cost_;
  std::vector<int> comm_sms_;
  std::vector<std::vector<Running>> running_compute_;       // per GPU: its compute-bound kernels running
  mutable std::vector<std::optional<GemmTiling>> tilings_;  // per op, once known
};

}  // namespace tpsim::sim
