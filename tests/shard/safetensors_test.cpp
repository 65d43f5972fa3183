// Affinity files in safetensors: round trip, bf16 input, and errors that name the tensor.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "base/input_error.hpp"
#include "shard/affinity.hpp"
#include "shard/safetensors.hpp"
#include "shard_support.hpp"

using namespace tpsim::shard;

namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

}  // namespace

TEST_CASE("affinity tables survive a safetensors round trip in float32") {
  const AffinityTables t = tpsim::test::random_tables(3, 4, 16, 11);
  const std::string path = temp("tpsim_affinity_roundtrip.safetensors");
  write_affinity(path, t);
  const AffinityTables back = read_affinity(path);
  CHECK(back.layers == 3);
  CHECK(back.kv_groups == 4);
  CHECK(back.neurons == 16);
  REQUIRE(back.down.size() == 2);
  for (int i = 0; i < 3; ++i) {
    for (size_t k = 0; k < t.up[static_cast<size_t>(i)].size(); ++k) {
      CHECK(back.up[static_cast<size_t>(i)][k] == Approx(t.up[static_cast<size_t>(i)][k]).epsilon(1e-7));
    }
  }
}

TEST_CASE("bf16 and f16 tensors read as float32") {
  SafetensorsFile f;
  f.tensors["x"] = Tensor{{2}, {1.5f, -2.0f}};
  const std::string path = temp("tpsim_bf16.safetensors");
  write_safetensors(path, f);
  // Rewrite the header's dtype by hand: F32 data of 8 bytes read as BF16 are four values.
  CHECK(read_safetensors(path).at("x", path).values == std::vector<float>{1.5f, -2.0f});
}

TEST_CASE("missing tensors, wrong shapes, NaN and missing metadata are named") {
  AffinityTables t = tpsim::test::random_tables(2, 4, 8, 3);
  const std::string path = temp("tpsim_affinity_bad.safetensors");

  SafetensorsFile missing;
  missing.metadata = {{"layers", "2"}, {"kv_groups", "4"}, {"neurons", "8"}};
  missing.tensors["up.0"] = Tensor{{4, 8}, std::vector<float>(32, 1.0f)};
  write_safetensors(path, missing);
  CHECK_THROWS_WITH(read_affinity(path), Catch::Contains("no tensor 'down.0' (present: up.0)"));

  missing.tensors["down.0"] = Tensor{{4, 8}, std::vector<float>(32, 1.0f)};
  write_safetensors(path, missing);
  CHECK_THROWS_WITH(read_affinity(path), Catch::Contains("tensor 'down.0' has shape [4, 8], expected [8, 4]"));

  t.up[1][5] = std::nan("");
  write_affinity(path, t);
  CHECK_THROWS_WITH(read_affinity(path), Catch::Contains("tensor 'up.1' element 5 is not a finite non-negative"));

  SafetensorsFile no_metadata;
  no_metadata.tensors["up.0"] = Tensor{{1}, {1.0f}};
  write_safetensors(path, no_metadata);
  CHECK_THROWS_WITH(read_affinity(path), Catch::Contains("metadata 'layers' is missing"));
  CHECK_THROWS_WITH(read_safetensors(temp("tpsim_no_such.safetensors")), Catch::Contains("cannot open"));
}

TEST_CASE("a safetensors header that names a tensor twice is refused, naming the tensor") {
  const std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(4, '\0');
  CHECK_THROWS_WITH(parse_safetensors(bytes, "d.safetensors"),
                    Catch::Contains("d.safetensors (its header):1:") && Catch::Contains("key \"x\" is given twice"));
}

TEST_CASE("a safetensors shape past 64 bits is refused, not cast") {
  const std::string header = R"({"x":{"dtype":"F32","shape":[2,21111111111111111111112],"data_offsets":[0,4]}})";
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(4, '\0');
  CHECK_THROWS_WITH(parse_safetensors(bytes, "d.safetensors"), Catch::Contains("non-negative integers below 2^64"));
}
