// tpsim-real dtp: for each delta (a scenario's tp_mode dtp delta), the DTP chain with its all-reduces
// overlapped against blocking TP over the same modules, both queued per iteration behind a barrier and a
// spin; the overlapped chain's result is checked against the same DTP function run without overlap.
#include <cmath>

#include "base/input_error.hpp"
#include "real/core/accuracy.hpp"
#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/dtp_chain.hpp"
#include "real/cuda/gemm_check.hpp"
#include "real/cuda/team_samples.hpp"

namespace tpsim::real {
namespace {

using Chains = std::vector<std::unique_ptr<DtpChain>>;

// One queued iteration of `enqueue` on every rank.
std::vector<IterationTime> chain_iteration(CommTeam& team, Chains& chains,
                                           const std::function<void(DtpChain&)>& enqueue) {
  std::vector<IterationTime> times(chains.size());
  team.run([&](Rank& rank) {
    DtpChain& chain = *chains[rank.local_index];
    chain.begin();
    enqueue(chain);
    const bool late = chain.end();
    times[rank.local_index] = {chain.elapsed_s(), late};
  });
  return times;
}

// The overlapped chain's H against the non-overlapped one's, worst over ranks.
double check_chain(CommTeam& team, Chains& chains, uint64_t seed) {
  std::vector<double> errors(chains.size());
  team.run([&](Rank& rank) {
    DtpChain& chain = *chains[rank.local_index];
    const size_t bytes = static_cast<size_t>(chain.state_elements()) * 2;
    DeviceBuffer reference(rank.device, bytes);
    chain.begin();
    chain.enqueue_dtp(false);
    chain.end();
    TPSIM_CUDA(cudaMemcpyAsync(reference.get(), chain.state(), bytes, cudaMemcpyDeviceToDevice, rank.compute));
    chain.begin();
    chain.enqueue_dtp(true);
    chain.end();
    TPSIM_CUDA(cudaStreamSynchronize(rank.compute));
    const double e = compare_sampled_bf16(reference.get(), chain.state(), chain.state_elements(), seed + rank.rank);
    errors[rank.local_index] = team.worst_error_over_ranks(rank, e);
  });
  return errors.front();
}

}  // namespace

int run_dtp_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  CommTeam team(o, arguments);
  MeasurementLog log(team.leads() ? o.json_out : "");
  TextTable table({"M", "N", "K", "modules", "delta", "blocking TP us", "DTP us", "speedup", "noise %", "check"});
  bool all_correct = true;
  for (const GemmCase& shape : o.shapes) {
    if (shape.k > shape.n) {
      throw InputError("--shape " + std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                       std::to_string(shape.k) +
                       ": a DTP module reads the first K columns of its N-wide input, so K <= N");
    }
    for (int delta : o.deltas) {
      const DtpConfig config{shape, element_type(o.dtype), o.modules, delta};
      Chains chains(team.local_ranks().size());
      team.run([&](Rank& rank) { chains[rank.local_index] = std::make_unique<DtpChain>(rank, config, o.seed); });
      const double error = check_chain(team, chains, o.seed);
      GpuStateSampler gpu_state = sample_gpu_state(team.local_devices());
      const TeamSamples blocking = sample_team(
          team, o.timing, [&] { return chain_iteration(team, chains, [](DtpChain& c) { c.enqueue_blocking_tp(); }); });
      const TeamSamples delayed = sample_team(
          team, o.timing, [&] { return chain_iteration(team, chains, [](DtpChain& c) { c.enqueue_dtp(true); }); });
      PointContext c{
          team.gpu(), team.provenance_json(),        summarize(delayed.slowest), 1,
          error,      within(error, kBf16Tolerance), gpu_state.finish(),         blocking.late + delayed.late};
      all_correct = all_correct && c.correct;
      const calibrate::Measurement m =
          dtp_point(c, shape, o.dtype, team.size(), o.modules, delta, summarize(blocking.slowest));
      log.add(m);
      table.add_row({std::to_string(shape.m), std::to_string(shape.n), std::to_string(shape.k),
                     std::to_string(o.modules), std::to_string(delta), fixed(m.baseline_s * 1e6, 1),
                     fixed(c.timing.median * 1e6, 1), fixed(m.speedup(), 3), fixed(100 * c.timing.spread(), 1),
                     c.correct ? "ok" : "FAILED"});
    }
  }
  log.finish();
  if (team.leads()) print_report(o, "DTP chains over " + std::to_string(team.size()) + " ranks\n" + table.str());
  return all_correct ? 0 : 1;
}

}  // namespace tpsim::real
