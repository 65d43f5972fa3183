// Atomic publication and polling of the unique-id file.
#include "real/core/unique_id_file.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "base/input_error.hpp"

namespace tpsim::real {

void publish_unique_id(const std::string& path, const std::vector<char>& id) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(id.data(), static_cast<std::streamsize>(id.size()));
    if (!out.flush()) throw InputError(path + ": cannot write the NCCL id (is the directory shared and writable?)");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) throw InputError(path + ": cannot publish the NCCL id: " + error.message());
}

std::vector<char> wait_for_unique_id(const std::string& path, size_t size, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::vector<char> id((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (id.size() == size) return id;
      throw InputError(path + ": holds " + std::to_string(id.size()) + " bytes, not a " + std::to_string(size) +
                       "-byte NCCL id; remove it (a file left by an earlier run?) and launch again");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw InputError(path + ": no NCCL id after " + std::to_string(static_cast<int>(timeout_s)) +
                       " s; did rank 0 start, and do all ranks see this path?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace tpsim::real
