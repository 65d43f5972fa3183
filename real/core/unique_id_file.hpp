// The NCCL unique id through a shared filesystem, for launches without MPI (srun, pdsh, a job script):
// rank 0 writes the id's bytes to a file atomically (temporary file, then rename); the other ranks
// poll until it appears, up to a timeout. The id is opaque bytes here; the CUDA side makes and uses it.
#pragma once

#include <string>
#include <vector>

namespace tpsim::real {

void publish_unique_id(const std::string& path, const std::vector<char>& id);

// Waits for the file to hold exactly `size` bytes; throws InputError after `timeout_s` seconds, or
// when it holds another size (a stale or foreign file).
std::vector<char> wait_for_unique_id(const std::string& path, size_t size, double timeout_s);

}  // namespace tpsim::real
