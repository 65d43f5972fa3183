// Message-size sweeps and size parsing of tpsim-real.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "real/core/size_sweep.hpp"

using tpsim::real::geometric_sizes;
using tpsim::real::parse_size;

TEST_CASE("a geometric sweep doubles from the smallest size to the largest, both included", "[real][sizes]") {
  const std::vector<int64_t> sizes = geometric_sizes(8, int64_t{128} << 20, 2.0, 1);
  // 8 B = 2^3 to 128 MiB = 2^27: 25 powers of two.
  REQUIRE(sizes.size() == 25);
  for (size_t i = 0; i < sizes.size(); ++i) CHECK(sizes[i] == int64_t{1} << (3 + i));
}

TEST_CASE("sweep sizes round down to what the collective splits evenly, without repeats", "[real][sizes]") {
  // 32 B alignment (float32 over 8 ranks): 8, 16 and 32 all give 32; 64 stays; the largest, 100, rounds to 96.
  CHECK(geometric_sizes(8, 100, 2.0, 32) == std::vector<int64_t>{32, 64, 96});
  CHECK(geometric_sizes(1000, 1000, 2.0, 1) == std::vector<int64_t>{1000});
}

TEST_CASE("a sweep upside down or with a factor of 1 or less is refused", "[real][sizes]") {
  CHECK_THROWS_WITH(geometric_sizes(1024, 8, 2.0, 1), "--min-bytes 1024 is above --max-bytes 8");
  CHECK_THROWS_WITH(geometric_sizes(8, 1024, 1.0, 1), "--factor must be a number above 1");
}

TEST_CASE("sizes read with binary and decimal units, and bad ones say what is accepted", "[real][sizes]") {
  CHECK(parse_size("64KiB", "--sizes") == 65536);
  CHECK(parse_size("1GB", "--sizes") == 1000000000);
  CHECK(parse_size("4096", "--sizes") == 4096);
  CHECK(parse_size("2TiB", "--sizes") == int64_t{2} << 40);
  CHECK(parse_size("1TB", "--sizes") == 1000000000000);
  CHECK_THROWS_WITH(parse_size("2048TiB", "--sizes"), Catch::Contains("over the largest size tpsim simulates, 1 PiB"));
  CHECK_THROWS_WITH(parse_size("lots", "--max-bytes"), Catch::StartsWith("--max-bytes lots: 'lots' is not a size"));
  CHECK_THROWS_WITH(parse_size("0", "--sizes"), Catch::Contains("is not a size"));
  CHECK_THROWS_WITH(parse_size("-5", "--sizes"), Catch::Contains("is not a size"));
  CHECK_THROWS_WITH(parse_size("1.5", "--sizes"), Catch::Contains("a positive whole number of bytes"));
}
