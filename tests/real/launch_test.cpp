// Host-side launch plumbing of tpsim-real: the NCCL id file and provenance.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/input_error.hpp"
#include "real/core/provenance.hpp"
#include "real/core/unique_id_file.hpp"

using namespace tpsim::real;

TEST_CASE("the NCCL id travels through a file that appears whole", "[real][launch]") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "tpsim_real_id_test";
  std::filesystem::remove(path);
  const std::vector<char> id = {1, 2, 3, 0, 5, 6, 7, 8};
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    publish_unique_id(path.string(), id);
  });
  const std::vector<char> received = wait_for_unique_id(path.string(), id.size(), 10.0);
  writer.join();
  CHECK(received == id);
  CHECK_THROWS_WITH(wait_for_unique_id(path.string(), 128, 1.0),
                    Catch::Contains("holds 8 bytes, not a 128-byte NCCL id"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(wait_for_unique_id(path.string(), 8, 0.1), Catch::Contains("no NCCL id after"));
}

TEST_CASE("library version codes read as their releases", "[real][launch]") {
  CHECK(cuda_version_text(13000) == "13.0");
  CHECK(cuda_version_text(12080) == "12.8");
  CHECK(cublas_version_text(130100) == "13.1.0");
  CHECK(nccl_version_text(22809) == "2.28.9");
  CHECK(nccl_version_text(2708) == "2.7.8");
}

TEST_CASE("device names map to tpsim's GPU presets", "[real][launch]") {
  CHECK(gpu_preset_for_device("NVIDIA H200") == "h200-sxm");
  CHECK(gpu_preset_for_device("NVIDIA H100 80GB HBM3") == "h100-sxm");
  CHECK(gpu_preset_for_device("NVIDIA A100-SXM4-80GB") == "a100-sxm");
  CHECK(gpu_preset_for_device("NVIDIA H800") == "h800-sxm");  // the preset's name
  CHECK(gpu_preset_for_device("NVIDIA H100 PCIe") == "h100-pcie");
  CHECK(gpu_preset_for_device("NVIDIA H20") == "h20");
  CHECK(gpu_preset_for_device("NVIDIA A100-SXM4-40GB") == "a100-sxm-40gb");
  CHECK(gpu_preset_for_device("NVIDIA H100 NVL") == "nvidia-h100-nvl");  // no preset for the NVL part
  CHECK(gpu_preset_for_device("NVIDIA L40S") == "nvidia-l40s");
}

TEST_CASE("provenance records the tool, its revision, the host and the exact arguments", "[real][launch]") {
  const Provenance p = host_provenance({"tpsim-real", "memcpy", "--path", "device"});
  const nlohmann::ordered_json j = to_json(p);
  CHECK(j["tool"] == "tpsim-real");
  CHECK_FALSE(j["tool_version"].get<std::string>().empty());
  CHECK_FALSE(j["git_revision"].get<std::string>().empty());
  CHECK_FALSE(j["host"].get<std::string>().empty());
  CHECK(j["arguments"] == nlohmann::ordered_json::array({"tpsim-real", "memcpy", "--path", "device"}));
  CHECK(j["measured_at"].get<std::string>().size() == 20);  // 2026-11-29T21:00:00Z
  for (const char* key : {"device", "sm_count", "driver_cuda", "cuda_runtime", "cublas", "nccl"})
    CHECK(j.contains(key));
}
