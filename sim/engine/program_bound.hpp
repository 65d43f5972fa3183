// Lower bounds on a program's times without simulating it: what no run of the engine (engine.cpp) can beat, from each
// op's cost alone on an idle GPU and fabric, the host's launch gates and the dependencies between ops.
//
// Why each part can never be beaten: an op starts no earlier than the host has launched it (the launch costs summed
// in program order, as the engine sums them) and than its dependencies end (plus launch.gpu_wait_us across streams);
// a compute-bound kernel runs its work on its GPU's host, whose speed is at most kWorkRate (comm kernels' SMs and
// transfers' power only lower it, a shared-SM tail only adds); a memory-bound kernel waits its launch overhead and
// moves its bytes over its HBM link, at most that link's rate; a communication op waits its call latency, then each
// step waits its transport's latency and moves its message at most at its port's rate (a group outside the
// simulated one: its latency, then its bytes through its own link); SimGrid only shares links and hosts, which
// slows activities. The compute-bound kernels of one GPU share its host, the memory-bound ones its HBM link, and the
// flows to outside groups its NIC (or its port), so the program lasts at least each sum; the SM-driven ones hold
// SMs while their flows move, which the compute-bound work runs without. Every value is lowered by SimGrid's timing
// precision per op.
#pragma once

#include <optional>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/engine/engine.hpp"

namespace tpsim::sim {

struct ProgramBound {
  std::vector<double> start_s;     // per op: its earliest start
  std::vector<double> duration_s;  // per op: its shortest run
  std::vector<double> tail_s;      // per op: the least time from its end to the program's end
  std::vector<double> compute_s;   // per op: its compute-bound kernel work on its GPU's host (0: none)
  double makespan_s = 0;           // the least time the whole program takes
  double clocked_s = 0;            // the compute-bound kernels' work that follows the SM clock (no launch overheads)
  double other_J = 0;     // the least the rest draws above idle on one GPU at any clock: memory-bound kernels' HBM
                          // traffic, transfers (as sim/engine/runner/window_clock.hpp counts them)
  double gpu_wait_s = 0;  // launch.gpu_wait_us: from an op's end to a dependant's start on another stream
  double slack_s = 0;     // what each value above was lowered by (SimGrid's timing precision per op)
};

// The bounds of `graph` as the engine would play it with `options`; nullopt where they cannot be told here: a
// seeded skew, --no-symmetry's members or stages.
std::optional<ProgramBound> bound_program(const model::LayerGraph& graph, const CostModel& cost,
                                          const EngineOptions& options);

// The least time by which the last op of `later` ends after the last op of `earlier` (both sets by op id; `later`
// empty: the whole program), never negative; nullopt where no bound follows from the dependencies (the last of
// `earlier` may end with nothing of `later` after it). Of `earlier`'s ops the last to end has no descendant in
// `earlier`: the least over those of the longest path from its end to the end of an op of `later`.
std::optional<double> least_gap(const model::LayerGraph& graph, const ProgramBound& bound,
                                const std::vector<bool>& earlier, const std::vector<bool>& later);

// The least end of the last op of `ops`: the latest of their least ends, and at least their compute-bound work (all
// of it runs on one host from the program's start to that end).
double least_last_end(const ProgramBound& bound, const std::vector<bool>& ops);

}  // namespace tpsim::sim
