// The ranks of a multi-GPU measurement and their NCCL communicator. One process drives all local GPUs
// (a thread per GPU, communicators from ncclCommInitAll), or each of several processes drives one GPU
// (the unique id through a shared file, or MPI when built with it). Each rank owns a compute, a
// communication and a copy stream, a cuBLASLt handle and its workspace.
#pragma once

#include <cublasLt.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "real/core/options.hpp"
#include "real/core/provenance.hpp"
#include "real/cuda/device_buffer.hpp"

namespace tpsim::real {

struct Rank {
  int rank = 0;            // in the communicator
  int device = 0;          // local CUDA device
  size_t local_index = 0;  // in CommTeam::local_ranks()
  ncclComm_t comm = nullptr;
  cudaStream_t compute = nullptr;
  cudaStream_t comm_stream = nullptr;
  cudaStream_t copy = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer workspace;
  DeviceBuffer barrier_word;  // one float that barriers all-reduce
};

// `value` modulo `ranks`, in [0, ranks): the rank `value` steps from rank 0 around the ring (negative steps too).
inline int wrap_rank(int value, int ranks) {
  return ((value % ranks) + ranks) % ranks;
}

// Queues a barrier across all ranks on `stream`: an all-reduce of one element, which no rank's GPU
// leaves before every rank's has reached it. Every rank calls it, each from its own thread or process.
void enqueue_barrier(Rank& rank, cudaStream_t stream);

class CommTeam {
 public:
  // Throws GpuError when fewer than two ranks result or the launch options do not fit the machine.
  CommTeam(const RealOptions& options, const std::vector<std::string>& arguments);
  ~CommTeam();
  CommTeam(const CommTeam&) = delete;
  CommTeam& operator=(const CommTeam&) = delete;

  int size() const { return size_; }
  bool single_process() const { return single_process_; }
  // True in the process that holds rank 0: it prints and writes the results.
  bool leads() const { return ranks_.front()->rank == 0; }
  const std::string& gpu() const { return gpu_; }
  nlohmann::ordered_json provenance_json() const { return to_json(provenance_); }
  std::vector<std::unique_ptr<Rank>>& local_ranks() { return ranks_; }

  // Runs fn on every local rank, a thread each (device set), and rethrows the first failure.
  void run(const std::function<void(Rank&)>& fn);
  // Element-wise maximum of each rank's values over all ranks (an NCCL all-reduce); every rank calls it.
  std::vector<double> max_over_ranks(Rank& rank, const std::vector<double>& values);
  // The worst correctness-check error over all ranks; a NaN (a failed check) anywhere stays a failure
  // (sent as infinity: NCCL's max does not order NaN). Every rank calls it.
  double worst_error_over_ranks(Rank& rank, double error);
  // Enables direct peer access between every pair of local GPUs; false if some pair cannot.
  bool enable_peer_access();
  // A barrier across all ranks on every local rank's compute stream, queued from this one thread (one
  // NCCL group): for iterations one thread enqueues for all local GPUs.
  void enqueue_barrier_all();
  std::vector<int> local_devices() const;

 private:
  std::vector<std::unique_ptr<Rank>> ranks_;
  int size_ = 0;
  bool single_process_ = true;
  Provenance provenance_;
  std::string gpu_;
};

}  // namespace tpsim::real
