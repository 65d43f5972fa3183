// Communicator set-up for the two launch modes, and the per-rank threads.
#include "real/cuda/comm_team.hpp"

#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "real/core/unique_id_file.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/gemm_op.hpp"

#ifdef TPSIM_WITH_MPI
#include <mpi.h>
#endif

namespace tpsim::real {
namespace {

// How long ranks wait for rank 0's id file: long enough for a slow job start on a busy cluster.
constexpr double kIdWaitSeconds = 300;

std::unique_ptr<Rank> make_rank(int rank, int device) {
  auto r = std::make_unique<Rank>();
  r->rank = rank;
  r->device = device;
  TPSIM_CUDA(cudaSetDevice(device));
  TPSIM_CUDA(cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking));
  TPSIM_CUDA(cudaStreamCreateWithFlags(&r->comm_stream, cudaStreamNonBlocking));
  TPSIM_CUDA(cudaStreamCreateWithFlags(&r->copy, cudaStreamNonBlocking));
  TPSIM_CUBLAS(cublasLtCreate(&r->lt));
  r->workspace = DeviceBuffer(device, kGemmWorkspaceBytes);
  r->barrier_word = DeviceBuffer(device, sizeof(float));
  TPSIM_CUDA(cudaMemset(r->barrier_word.get(), 0, sizeof(float)));
  return r;
}

ncclUniqueId exchange_id(const LaunchOptions& launch, int rank) {
  ncclUniqueId id{};
  if (rank == 0) TPSIM_NCCL(ncclGetUniqueId(&id));
  if (launch.mpi) {
#ifdef TPSIM_WITH_MPI
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    return id;
#else
    throw GpuError("--mpi: this tpsim-real was built without MPI (configure with -DTPSIM_REAL_MPI=ON)");
#endif
  }
  if (rank == 0) {
    publish_unique_id(launch.id_file, std::vector<char>(id.internal, id.internal + sizeof id.internal));
  } else {
    const std::vector<char> bytes = wait_for_unique_id(launch.id_file, sizeof id.internal, kIdWaitSeconds);
    std::copy(bytes.begin(), bytes.end(), id.internal);
  }
  return id;
}

void rank_and_size(const LaunchOptions& launch, int* rank, int* size) {
  *rank = launch.rank;
  *size = launch.nranks;
#ifdef TPSIM_WITH_MPI
  if (launch.mpi) {
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
  }
#endif
}

}  // namespace

CommTeam::CommTeam(const RealOptions& options, const std::vector<std::string>& arguments)
    : provenance_(host_provenance(arguments)) {
  const std::string problem = cuda_device_problem();
  if (!problem.empty()) throw GpuError(problem);
  const int visible = visible_device_count();
  const LaunchOptions& launch = options.launch;
  if (launch.multi_process()) {
    single_process_ = false;
    int rank = 0;
    rank_and_size(launch, &rank, &size_);
    const int device = launch.local_device >= 0 ? launch.local_device : rank % visible;
    ranks_.push_back(make_rank(rank, device));
    const ncclUniqueId id = exchange_id(launch, rank);
    TPSIM_CUDA(cudaSetDevice(device));
    TPSIM_NCCL(ncclCommInitRank(&ranks_.front()->comm, size_, id, rank));
  } else {
    size_ = launch.devices > 0 ? launch.devices : visible;
    if (size_ > visible) {
      throw GpuError("--devices " + std::to_string(size_) + ": this process sees " + std::to_string(visible) + " GPUs");
    }
    std::vector<int> devices;
    std::vector<ncclComm_t> comms(static_cast<size_t>(size_));
    for (int d = 0; d < size_; ++d) {
      devices.push_back(d);
      ranks_.push_back(make_rank(d, d));
      ranks_.back()->local_index = static_cast<size_t>(d);
    }
    if (size_ >= 2) TPSIM_NCCL(ncclCommInitAll(comms.data(), size_, devices.data()));
    for (int d = 0; d < size_; ++d) ranks_[static_cast<size_t>(d)]->comm = comms[static_cast<size_t>(d)];
  }
  if (size_ < 2) {
    throw GpuError("this measurement needs at least 2 GPUs (ranks); " + std::to_string(size_) +
                   " available. Single-GPU stand-ins: tpsim-real overlap --partner memcpy_device|copy_kernel");
  }
  provenance_.ranks = size_;
  provenance_.device = device_facts(ranks_.front()->device);
  gpu_ = options.gpu.empty() ? gpu_preset_for_device(provenance_.device.name) : options.gpu;
}

CommTeam::~CommTeam() {
  for (auto& r : ranks_) {
    cudaSetDevice(r->device);
    if (r->comm != nullptr) ncclCommDestroy(r->comm);
    if (r->lt != nullptr) cublasLtDestroy(r->lt);
    for (cudaStream_t s : {r->compute, r->comm_stream, r->copy}) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
  }
}

void CommTeam::run(const std::function<void(Rank&)>& fn) {
  if (ranks_.size() == 1) {
    TPSIM_CUDA(cudaSetDevice(ranks_.front()->device));
    fn(*ranks_.front());
    return;
  }
  std::exception_ptr failure;
  std::mutex mutex;
  std::vector<std::thread> threads;
  for (auto& r : ranks_) {
    threads.emplace_back([&, rank = r.get()] {
      try {
        TPSIM_CUDA(cudaSetDevice(rank->device));
        fn(*rank);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

std::vector<double> CommTeam::max_over_ranks(Rank& rank, const std::vector<double>& values) {
  DeviceBuffer buffer(rank.device, values.size() * sizeof(double));
  TPSIM_CUDA(cudaMemcpy(buffer.get(), values.data(), buffer.bytes(), cudaMemcpyHostToDevice));
  TPSIM_NCCL(
      ncclAllReduce(buffer.get(), buffer.get(), values.size(), ncclFloat64, ncclMax, rank.comm, rank.comm_stream));
  TPSIM_CUDA(cudaStreamSynchronize(rank.comm_stream));
  std::vector<double> out(values.size());
  TPSIM_CUDA(cudaMemcpy(out.data(), buffer.get(), buffer.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

double CommTeam::worst_error_over_ranks(Rank& rank, double error) {
  return max_over_ranks(rank, {std::isnan(error) ? INFINITY : error}).front();
}

void enqueue_barrier(Rank& rank, cudaStream_t stream) {
  TPSIM_NCCL(
      ncclAllReduce(rank.barrier_word.get(), rank.barrier_word.get(), 1, ncclFloat32, ncclSum, rank.comm, stream));
}

void CommTeam::enqueue_barrier_all() {
  TPSIM_NCCL(ncclGroupStart());
  for (auto& r : ranks_) {
    TPSIM_CUDA(cudaSetDevice(r->device));
    enqueue_barrier(*r, r->compute);
  }
  TPSIM_NCCL(ncclGroupEnd());
}

std::vector<int> CommTeam::local_devices() const {
  std::vector<int> devices;
  for (const auto& r : ranks_) devices.push_back(r->device);
  return devices;
}

bool CommTeam::enable_peer_access() {
  bool all = true;
  for (auto& a : ranks_) {
    for (auto& b : ranks_) {
      if (a->device != b->device) all = real::enable_peer_access(a->device, b->device) && all;
    }
  }
  return all;
}

}  // namespace tpsim::real
