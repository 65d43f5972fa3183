// tpsim-real overlap: a GEMM on one stream and a partner on another, alone and together. Partners on
// one GPU (copy engine: memcpy_device; SMs: copy_kernel) stand in for communication's contention;
// memcpy_peer and collectives need two GPUs. Every rank of a collective runs the GEMM too, as under TP.
// Every sample is queued behind a spinning kernel (and, for collectives, a barrier across ranks).
#include <algorithm>
#include <cmath>

#include "real/core/accuracy.hpp"
#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/collective_ops.hpp"
#include "real/cuda/comm_team.hpp"
#include "real/cuda/copy_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/gemm_buffers.hpp"
#include "real/cuda/gemm_check.hpp"
#include "real/cuda/gpu_session.hpp"
#include "real/cuda/overlap_timer.hpp"

namespace tpsim::real {
namespace {

// A communication kernel occupies a few SMs (NCCL: one block per channel): 16, as the profiles'
// nccl.sms (assumed there until real/ overlap measurements fit it).
constexpr int kDefaultCopyBlocks = 16;

struct OverlapResult {
  OverlapSamples samples;
  double error = 0;  // the larger of the GEMM's and the partner's check errors
};

// Everything one rank's GEMM needs.
struct GemmSide {
  GemmSide(cublasLtHandle_t lt, const GemmCase& shape, const RealOptions& o, void* workspace, int device,
           int64_t l2_bytes, cudaStream_t stream)
      : op(lt, shape, element_type(o.dtype), workspace, kGemmWorkspaceBytes),
        sets(make_gemm_sets(op, device, rotation_sets(l2_bytes, op.x_bytes() + op.w_bytes() + op.y_bytes()), o.seed,
                            stream)) {}
  void launch(int i, cudaStream_t stream) const {
    const GemmBuffers& b = sets[static_cast<size_t>(i) % sets.size()];
    op.run(b.x.get(), b.w.get(), b.y.get(), stream);
  }
  GemmOp op;
  std::vector<GemmBuffers> sets;
};

// Runs the pair once on poisoned outputs and returns the GEMM's check error; `partner_check` gives
// the partner's (0 right, anything else wrong).
double check_pair(const GemmSide& g, cudaStream_t gemm_stream, cudaStream_t partner_stream,
                  const std::function<void(int)>& partner, const std::function<double()>& partner_check,
                  uint64_t seed) {
  TPSIM_CUDA(cudaMemsetAsync(g.sets[0].y.get(), 0xFF, g.op.y_bytes(), gemm_stream));
  TPSIM_CUDA(cudaStreamSynchronize(gemm_stream));
  g.launch(0, gemm_stream);
  partner(0);
  TPSIM_CUDA(cudaStreamSynchronize(gemm_stream));
  TPSIM_CUDA(cudaStreamSynchronize(partner_stream));
  const double gemm_error = check_gemm(g.op, g.sets[0].x.get(), g.sets[0].w.get(), g.sets[0].y.get(), seed);
  const double partner_error = partner_check();
  if (std::isnan(gemm_error) || std::isnan(partner_error)) return NAN;
  return std::max(gemm_error, partner_error);
}

OverlapResult single_gpu_overlap(const GpuSession& gpu, const GemmCase& shape, const std::string& partner,
                                 const RealOptions& o) {
  const GemmSide g(gpu.lt(), shape, o, gpu.workspace(), gpu.device(), gpu.facts().l2_bytes, gpu.stream());
  const auto bytes = static_cast<size_t>(o.sizes.sizes.front());
  int target = gpu.device();
  if (partner == "memcpy_peer") {
    const int count = visible_device_count();
    if (count < 2) throw GpuError("--partner memcpy_peer needs two GPUs; this process sees " + std::to_string(count));
    target = (gpu.device() + 1) % count;
    enable_peer_access(gpu.device(), target);  // else the driver stages the copy: still a valid measurement
  }
  DeviceBuffer src(gpu.device(), bytes), dst(target, bytes);
  TPSIM_CUDA(cudaSetDevice(gpu.device()));
  fill_uniform(src.get(), ElementType::kFp8E4m3, static_cast<int64_t>(bytes), o.seed + 99, 0, gpu.side_stream());
  const int blocks = o.copy_blocks > 0 ? o.copy_blocks : kDefaultCopyBlocks;
  const cudaStream_t side = gpu.side_stream();
  auto launch_partner = [&](int) {
    if (partner == "memcpy_device") {
      TPSIM_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, side));
    } else if (partner == "copy_kernel") {
      copy_with_kernel(dst.get(), src.get(), bytes, blocks, side);
    } else {
      TPSIM_CUDA(cudaMemcpyPeerAsync(dst.get(), target, src.get(), gpu.device(), bytes, side));
    }
  };
  OverlapResult r;
  r.error = check_pair(
      g, gpu.stream(), side, launch_partner, [&] { return copy_arrived(src.get(), dst.get(), bytes) ? 0.0 : 1.0; },
      o.seed);
  r.samples = time_overlap(
      gpu.stream(), side, o.timing, [&](int i) { g.launch(i, gpu.stream()); }, launch_partner, {}, o.partner_first);
  return r;
}

OverlapResult team_overlap(CommTeam& team, const GemmCase& shape, Collective collective, const RealOptions& o) {
  std::vector<OverlapResult> results(team.local_ranks().size());
  team.run([&](Rank& rank) {
    cudaDeviceProp prop{};
    TPSIM_CUDA(cudaGetDeviceProperties(&prop, rank.device));
    const GemmSide g(rank.lt, shape, o, rank.workspace.get(), rank.device, prop.l2CacheSize, rank.compute);
    const ElementType type = ElementType::kBf16;
    const CollectiveCall c{collective, type,
                           element_counts(collective, o.sizes.sizes.front(), team.size(), element_bytes(type)),
                           rank.rank, team.size()};
    DeviceBuffer send(rank.device, static_cast<size_t>(c.counts.send) * element_bytes(type));
    DeviceBuffer recv(rank.device, static_cast<size_t>(c.counts.recv) * element_bytes(type));
    fill_uniform(send.get(), type, c.counts.send, o.seed, static_cast<uint64_t>(rank.rank * c.counts.send),
                 rank.comm_stream);
    TPSIM_CUDA(cudaMemsetAsync(recv.get(), 0xFF, recv.bytes(), rank.comm_stream));
    auto launch_partner = [&](int) { enqueue_collective(c, send.get(), recv.get(), rank.comm, rank.comm_stream); };
    OverlapResult& r = results[rank.local_index];
    const double error = check_pair(
        g, rank.compute, rank.comm_stream, launch_partner,
        [&] { return check_collective_outputs(c, recv.get(), o.seed); }, o.seed);
    r.error = team.worst_error_over_ranks(rank, error);
    OverlapSamples s = time_overlap(
        rank.compute, rank.comm_stream, o.timing, [&](int i) { g.launch(i, rank.compute); }, launch_partner,
        [&rank](cudaStream_t stream) { enqueue_barrier(rank, stream); }, o.partner_first);
    r.samples.late = static_cast<int>(team.max_over_ranks(rank, {static_cast<double>(s.late)}).front());
    r.samples.gemm_alone = team.max_over_ranks(rank, s.gemm_alone);
    r.samples.partner_alone = team.max_over_ranks(rank, s.partner_alone);
    r.samples.gemm_together = team.max_over_ranks(rank, s.gemm_together);
    r.samples.together = team.max_over_ranks(rank, s.together);
  });
  return results.front();
}

}  // namespace

int run_overlap_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  const bool needs_team = std::any_of(o.partners.begin(), o.partners.end(), [](const std::string& p) {
    return p != "memcpy_device" && p != "copy_kernel" && p != "memcpy_peer";
  });
  std::unique_ptr<CommTeam> team = needs_team ? std::make_unique<CommTeam>(o, arguments) : nullptr;
  std::unique_ptr<GpuSession> gpu = needs_team ? nullptr : std::make_unique<GpuSession>(o, arguments, chosen_device(o));
  const bool leads = !team || team->leads();
  MeasurementLog log(leads ? o.json_out : "");
  TextTable table(
      {"M", "N", "K", "partner", "bytes", "GEMM us", "partner us", "together us", "GEMM slowdown", "speedup", "check"});
  bool all_correct = true;
  for (const GemmCase& shape : o.shapes) {
    for (const std::string& partner : o.partners) {
      const bool collective = partner != "memcpy_device" && partner != "copy_kernel" && partner != "memcpy_peer";
      GpuStateSampler gpu_state =
          sample_gpu_state(collective ? team->local_devices() : std::vector<int>{gpu->device()});
      const OverlapResult r = collective ? team_overlap(*team, shape, parse_collective(partner), o)
                                         : single_gpu_overlap(*gpu, shape, partner, o);
      const OverlapTimes t{summarize(r.samples.gemm_alone), summarize(r.samples.partner_alone),
                           summarize(r.samples.gemm_together)};
      PointContext c{team ? team->gpu() : gpu->gpu(),
                     team ? team->provenance_json() : gpu->provenance_json(),
                     summarize(r.samples.together),
                     1,
                     r.error,
                     within(r.error, kBf16Tolerance),
                     gpu_state.finish(),
                     r.samples.late};
      all_correct = all_correct && c.correct;
      const int ranks = collective ? team->size() : partner == "memcpy_peer" ? 2 : 1;
      calibrate::Measurement m = overlap_point(c, shape, o.dtype, partner, o.sizes.sizes.front(), ranks, t);
      if (partner == "copy_kernel") m.details["blocks"] = o.copy_blocks > 0 ? o.copy_blocks : kDefaultCopyBlocks;
      m.details["partner_first"] = o.partner_first;
      log.add(m);
      table.add_row({std::to_string(shape.m), std::to_string(shape.n), std::to_string(shape.k), partner,
                     std::to_string(o.sizes.sizes.front()), fixed(t.gemm_alone.median * 1e6, 1),
                     fixed(t.partner_alone.median * 1e6, 1), fixed(c.timing.median * 1e6, 1),
                     fixed(t.gemm_overlapped.median / t.gemm_alone.median, 3), fixed(m.speedup(), 3),
                     c.correct ? "ok" : "FAILED"});
    }
  }
  log.finish();
  if (leads) print_report(o, "GEMM + partner overlap\n" + table.str());
  return all_correct ? 0 : 1;
}

}  // namespace tpsim::real
