// The tpsim-real command line: subcommands, defaults, and one clear line for each bad value.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "real/core/options.hpp"

using tpsim::InputError;
using tpsim::real::CommandLineExit;
using tpsim::real::parse_options;

TEST_CASE("gemm takes repeated shapes and an operand type", "[real][options]") {
  const auto o = parse_options({"tpsim-real", "gemm", "--shape", "4096x8192x1024", "--shape", "16X32x64", "--dtype",
                                "fp8", "--json", "out.jsonl", "--samples", "10"});
  CHECK(o.command == "gemm");
  REQUIRE(o.shapes.size() == 2);
  CHECK(o.shapes[0].m == 4096);
  CHECK(o.shapes[0].n == 8192);
  CHECK(o.shapes[0].k == 1024);
  CHECK(o.shapes[1].n == 32);
  CHECK(o.dtype == "fp8");
  CHECK(o.json_out == "out.jsonl");
  CHECK(o.timing.samples == 10);
}

TEST_CASE("gemm without shapes or with a malformed one says what to give", "[real][options]") {
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "gemm"}),
                    "tpsim-real gemm needs --shape MxNxK, --shapes-file FILE or --scenario FILE");
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "gemm", "--shape", "10x0x5"}),
                    Catch::Contains("expected MxNxK with positive whole numbers"));
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "gemm", "--shape", "8x8x8", "--dtype", "fp4"}),
                    "--dtype fp4: valid: bf16, fp8");
}

TEST_CASE("collective sweeps default to nccl-tests-like sizes and refuse bad ones", "[real][options]") {
  const auto o = parse_options({"tpsim-real", "collective", "--op", "allreduce", "--op", "all_gather"});
  REQUIRE(o.collectives.size() == 2);
  CHECK(o.sizes.min_bytes == 8);
  CHECK(o.sizes.max_bytes == int64_t{128} << 20);
  CHECK(o.placement == "both");
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "collective", "--op", "broadcast"}),
                    Catch::StartsWith("unknown collective 'broadcast'"));
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "collective", "--op", "allreduce", "-b", "1GiB", "-e", "1MiB"}),
                    "--min-bytes 1073741824 is above --max-bytes 1048576");
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "collective", "--op", "allreduce", "--sizes", "2.5B"}),
                    Catch::Contains("a positive whole number of bytes"));
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "collective", "--op", "allreduce", "--placement", "sideways"}),
                    "--placement sideways: valid: out, in, both");
}

TEST_CASE("collective --graph captures that many calls in a CUDA graph, 0 launching them back to back",
          "[real][options]") {
  CHECK(parse_options({"tpsim-real", "collective", "--op", "allreduce"}).graph_calls == 0);
  CHECK(parse_options({"tpsim-real", "collective", "--op", "allreduce", "--graph", "20"}).graph_calls == 20);
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "collective", "--op", "allreduce", "--graph", "-1"}),
                    Catch::Contains("--graph") && Catch::Contains("not in range 0 to 10000"));
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "collective", "--op", "allreduce", "--graph", "x"}),
                    Catch::Contains("--graph"));
  // Only collectives are replayed from graphs.
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "gemm", "--shape", "8x8x8", "--graph", "4"}),
                    Catch::Contains("--graph"));
}

TEST_CASE("explicit sizes that a collective cannot split are refused when the rank count is known", "[real][options]") {
  const auto o = parse_options({"tpsim-real", "collective", "--op", "allgather", "--sizes", "1000", "4096"});
  CHECK_THROWS_WITH(o.sizes.resolve(32), Catch::Contains("--sizes 1000: must be a multiple of 32 B"));
  CHECK(parse_options({"tpsim-real", "collective", "--op", "allgather", "--sizes", "4096"}).sizes.resolve(32) ==
        std::vector<int64_t>{4096});
}

TEST_CASE("memcpy sweeps default to 1 MiB .. 1 GiB", "[real][options]") {
  const auto o = parse_options({"tpsim-real", "memcpy", "--path", "device"});
  CHECK(o.sizes.min_bytes == int64_t{1} << 20);
  CHECK(o.sizes.max_bytes == int64_t{1} << 30);
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "memcpy", "--path", "nvlink"}),
                    "--path nvlink: valid: device, copy_kernel, peer, peer_all_ranks");
  // Every GPU pulling at once drives them all through one team: a sweep of its own.
  CHECK(parse_options({"tpsim-real", "memcpy", "--path", "peer_all_ranks"}).memcpy_paths ==
        std::vector<std::string>{"peer_all_ranks"});
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "memcpy", "--path", "peer", "--path", "peer_all_ranks"}),
                    "--path peer_all_ranks drives every GPU of the process at once: give it alone");
}

TEST_CASE("overlap, async-tp and dtp take their partners, patterns and delays", "[real][options]") {
  const auto overlap = parse_options(
      {"tpsim-real", "overlap", "--partner", "copy_kernel", "--partner", "allgather", "--bytes", "64MiB"});
  CHECK(overlap.partners.size() == 2);
  CHECK(overlap.sizes.sizes == std::vector<int64_t>{int64_t{64} << 20});
  CHECK(overlap.shapes.front().m == 8192);  // the default shape
  CHECK_FALSE(overlap.partner_first);       // the GEMM starts first unless asked
  CHECK(parse_options({"tpsim-real", "overlap", "--partner", "copy_kernel", "--partner-first"}).partner_first);
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "overlap", "--partner", "teleport"}),
                    Catch::StartsWith("unknown collective 'teleport'"));

  const auto async = parse_options({"tpsim-real", "async-tp", "--pattern", "allgather_gemm", "--chunks", "8",
                                    "--chunks", "16", "--shape", "8192x3584x4096"});
  CHECK(async.transports == std::vector<std::string>{"nccl"});
  CHECK(async.chunks == std::vector<int>{8, 16});
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "async-tp", "--pattern", "gemm_allreduce", "--chunks", "8"}),
                    "--pattern gemm_allreduce: valid: allgather_gemm, gemm_reducescatter");

  // A scenario's dtp delta: 0 is blocking TP.
  const auto dtp = parse_options({"tpsim-real", "dtp", "--delta", "0", "--delta", "4", "--modules", "16"});
  CHECK(dtp.deltas == std::vector<int>{0, 4});
  CHECK(dtp.modules == 16);
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "dtp", "--delta", "-1"}), Catch::Contains("--delta"));
}

TEST_CASE("multi-process launches need a rank and a count, and one way to meet", "[real][options]") {
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "dtp", "--delta", "2", "--id-file", "/tmp/id"}),
                    "--id-file needs --rank R and --nranks N with 0 <= R < N");
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "dtp", "--delta", "2", "--id-file", "/tmp/id", "--mpi"}),
                    "--id-file and --mpi are two ways to launch; give one");
  const auto o =
      parse_options({"tpsim-real", "dtp", "--delta", "2", "--id-file", "/tmp/id", "--rank", "3", "--nranks", "16"});
  CHECK(o.launch.multi_process());
  CHECK(o.launch.rank == 3);
}

TEST_CASE("unknown flags, missing subcommands and missing required options are usage errors", "[real][options]") {
  CHECK_THROWS_AS(parse_options({"tpsim-real"}), InputError);
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "gemm", "--bogus"}), Catch::Contains("--bogus"));
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "collective"}), Catch::Contains("--op is required"));
  try {
    parse_options({"tpsim-real", "--help"});
    FAIL("--help did not exit");
  } catch (const CommandLineExit& exit) {
    CHECK(exit.code() == 0);
  }
}

TEST_CASE("launch takes a chain length of at least two kernels", "[real][options]") {
  CHECK(parse_options({"tpsim-real", "launch"}).kernels == 1000);
  CHECK(parse_options({"tpsim-real", "launch", "--kernels", "50"}).kernels == 50);
  CHECK_THROWS_WITH(parse_options({"tpsim-real", "launch", "--kernels", "1"}), Catch::Contains("--kernels"));
}
