// tpsim-real memcpy: HBM bandwidth through the copy engine (cudaMemcpyAsync within a GPU) and through
// an SM copy kernel, and peer bandwidth over NVLink (cudaMemcpyPeerAsync: the copy-engine path).
#include <algorithm>

#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/copy_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/event_timer.hpp"
#include "real/cuda/gpu_session.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {
namespace {

struct CopyTarget {
  int device = 0;
  bool peer_access = false;  // direct NVLink / PCIe peer access, else staged by the driver
};

CopyTarget peer_target(int device) {
  const int count = visible_device_count();
  if (count < 2) throw GpuError("memcpy --path peer needs two GPUs; this process sees " + std::to_string(count));
  const int peer = (device + 1) % count;
  return CopyTarget{peer, enable_peer_access(device, peer)};
}

void copy_once(const std::string& path, void* dst, int dst_device, const void* src, int src_device, size_t bytes,
               int blocks, cudaStream_t stream) {
  if (path == "device") {
    TPSIM_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  } else if (path == "copy_kernel") {
    copy_with_kernel(dst, src, bytes, blocks, stream);
  } else {
    TPSIM_CUDA(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, stream));
  }
}

}  // namespace

int run_memcpy_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  if (o.memcpy_paths == std::vector<std::string>{"peer_all_ranks"}) return run_all_ranks_pull_bench(o, arguments);
  GpuSession gpu(o, arguments, chosen_device(o));
  std::vector<std::string> paths = o.memcpy_paths;
  if (paths.empty())
    paths = visible_device_count() > 1 ? std::vector<std::string>{"device", "copy_kernel", "peer"}
                                       : std::vector<std::string>{"device", "copy_kernel"};
  MeasurementLog log(o.json_out);
  TextTable table({"path", "bytes", "median us", "GB/s", "HBM GB/s", "noise %", "check"});
  bool all_correct = true;
  for (const std::string& path : paths) {
    const CopyTarget target = path == "peer" ? peer_target(gpu.device()) : CopyTarget{gpu.device(), true};
    for (int64_t size : o.sizes.resolve(1)) {
      const auto bytes = static_cast<size_t>(size);
      const int sets = gpu.rotation_sets(2 * bytes);
      std::vector<DeviceBuffer> src, dst;
      for (int i = 0; i < sets; ++i) {
        src.emplace_back(gpu.device(), bytes);
        dst.emplace_back(target.device, bytes);
        TPSIM_CUDA(cudaSetDevice(gpu.device()));
        fill_uniform(src.back().get(), ElementType::kFp8E4m3, size, o.seed + i, 0, gpu.stream());
      }
      TPSIM_CUDA(cudaStreamSynchronize(gpu.stream()));
      TPSIM_CUDA(cudaSetDevice(target.device));
      TPSIM_CUDA(cudaMemset(dst[0].get(), 0xFF, bytes));  // poison: a copy that writes nothing fails
      TPSIM_CUDA(cudaSetDevice(gpu.device()));
      copy_once(path, dst[0].get(), target.device, src[0].get(), gpu.device(), bytes, o.copy_blocks, gpu.stream());
      TPSIM_CUDA(cudaStreamSynchronize(gpu.stream()));
      PointContext c{gpu.gpu(), gpu.provenance_json(), {}, 1, 0, copy_arrived(src[0].get(), dst[0].get(), bytes),
                     {},        std::nullopt};
      c.check_error = c.correct ? 0.0 : 1.0;
      all_correct = all_correct && c.correct;
      GpuStateSampler gpu_state = sample_gpu_state({gpu.device()});
      const TimedRun run = time_launches(gpu.stream(), o.timing, [&](int i) {
        const size_t s = static_cast<size_t>(i) % src.size();
        copy_once(path, dst[s].get(), target.device, src[s].get(), gpu.device(), bytes, o.copy_blocks, gpu.stream());
      });
      c.gpu_state = gpu_state.finish();
      c.timing = summarize(run.seconds);
      c.launches_per_sample = run.launches;
      calibrate::Measurement m = memcpy_point(c, path, size);
      if (path == "peer") m.details["peer_access"] = target.peer_access;
      if (path == "copy_kernel") m.details["blocks"] = o.copy_blocks > 0 ? o.copy_blocks : gpu.facts().sm_count;
      log.add(m);
      table.add_row({path, std::to_string(size), fixed(c.timing.median * 1e6, 1), fixed(m.algbw_GBps(), 1),
                     path == "peer" ? "-" : fixed(2 * m.algbw_GBps(), 1), fixed(100 * c.timing.spread(), 1),
                     c.correct ? "ok" : "FAILED"});
    }
  }
  log.finish();
  print_report(o, "Copies on " + gpu.facts().name + "\n" + table.str());
  return all_correct ? 0 : 1;
}

}  // namespace tpsim::real
