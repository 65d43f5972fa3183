// nccl-tests conventions of real/: bus factors, element counts, alignments, and the reference outputs.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "real/core/collective.hpp"
#include "real/core/collective_reference.hpp"
#include "real/core/random_values.hpp"

using namespace tpsim::real;

TEST_CASE("bus bandwidth factors are nccl-tests' 2(n-1)/n, (n-1)/n and 1", "[real][collective]") {
  for (int n : {2, 4, 8, 16}) {
    const double r = n;
    CHECK(bus_factor(Collective::kAllReduce, n) == Approx(2 * (r - 1) / r));
    CHECK(bus_factor(Collective::kAllGather, n) == Approx((r - 1) / r));
    CHECK(bus_factor(Collective::kReduceScatter, n) == Approx((r - 1) / r));
    CHECK(bus_factor(Collective::kAllToAll, n) == Approx((r - 1) / r));
    CHECK(bus_factor(Collective::kSendRecv, n) == 1.0);
  }
}

TEST_CASE("the reported size is the whole tensor and each rank's counts follow from it", "[real][collective]") {
  const int64_t bytes = 8 << 20;  // float32: 2Mi elements in all
  const int64_t total = bytes / 4;
  const ElementCounts ag = element_counts(Collective::kAllGather, bytes, 8, 4);
  CHECK(ag.send == total / 8);
  CHECK(ag.recv == total);
  const ElementCounts rs = element_counts(Collective::kReduceScatter, bytes, 8, 4);
  CHECK(rs.send == total);
  CHECK(rs.recv == total / 8);
  const ElementCounts ar = element_counts(Collective::kAllReduce, bytes, 8, 4);
  CHECK(ar.send == total);
  CHECK(ar.recv == total);
}

TEST_CASE("sizes a collective cannot split evenly are refused with the multiple that works", "[real][collective]") {
  CHECK(size_alignment(Collective::kAllGather, 8, 2) == 16);
  CHECK(size_alignment(Collective::kAllReduce, 8, 2) == 2);
  CHECK_THROWS_WITH(element_counts(Collective::kReduceScatter, 100, 8, 4),
                    Catch::Contains("needs a positive multiple of 32 B"));
}

TEST_CASE("unknown collectives and element types name the valid ones", "[real][collective]") {
  CHECK(parse_collective("all_reduce") == Collective::kAllReduce);
  CHECK(parse_collective("reducescatter") == Collective::kReduceScatter);
  CHECK_THROWS_WITH(parse_collective("allsum"),
                    "unknown collective 'allsum'; valid: allreduce, allgather, reducescatter, alltoall, sendrecv");
  CHECK_THROWS_WITH(collective_element_bytes("fp64"), Catch::Contains("valid: float32, bf16"));
}

namespace {

// Every rank's input, built independently of collective_input.
std::vector<std::vector<double>> inputs(int ranks, int64_t count, uint64_t seed) {
  std::vector<std::vector<double>> in(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    for (int64_t j = 0; j < count; ++j) in[r].push_back(uniform_value(seed, static_cast<uint64_t>(r * count + j)));
  }
  return in;
}

}  // namespace

TEST_CASE("reference outputs follow NCCL's definitions of each collective", "[real][collective]") {
  const int n = 4;
  const uint64_t seed = 7;
  const int64_t per_rank = 8;  // send elements of an all-gather; blocks of 2 for all-to-all
  const auto in = inputs(n, per_rank, seed);
  const auto in_full = inputs(n, per_rank * n, seed);
  for (int r = 0; r < n; ++r) {
    CollectiveCall ag{Collective::kAllGather, ElementType::kFloat32, {per_rank, per_rank * n}, r, n};
    for (int64_t i = 0; i < per_rank * n; ++i)
      CHECK(collective_expected(ag, seed, i) == in[i / per_rank][i % per_rank]);

    CollectiveCall ar{Collective::kAllReduce, ElementType::kFloat32, {per_rank, per_rank}, r, n};
    for (int64_t i = 0; i < per_rank; ++i) {
      CHECK(collective_expected(ar, seed, i) == Approx(in[0][i] + in[1][i] + in[2][i] + in[3][i]));
    }
    CollectiveCall rs{Collective::kReduceScatter, ElementType::kFloat32, {per_rank * n, per_rank}, r, n};
    for (int64_t i = 0; i < per_rank; ++i) {
      double sum = 0;
      for (int q = 0; q < n; ++q) sum += in_full[q][r * per_rank + i];
      CHECK(collective_expected(rs, seed, i) == Approx(sum));
    }
    // All-to-all: block p of rank q's buffer goes to rank p, landing at block q.
    CollectiveCall a2a{Collective::kAllToAll, ElementType::kFloat32, {per_rank, per_rank}, r, n};
    const int64_t block = per_rank / n;
    for (int64_t i = 0; i < per_rank; ++i) {
      CHECK(collective_expected(a2a, seed, i) == in[i / block][r * block + i % block]);
    }
    CollectiveCall ring{Collective::kSendRecv, ElementType::kFloat32, {per_rank, per_rank}, r, n};
    for (int64_t i = 0; i < per_rank; ++i) CHECK(collective_expected(ring, seed, i) == in[(r + n - 1) % n][i]);
  }
}

TEST_CASE("bf16 collectives are checked against bf16-rounded inputs", "[real][collective]") {
  CollectiveCall ag{Collective::kAllGather, ElementType::kBf16, {4, 8}, 0, 2};
  const double exact = uniform_value(3, 5);
  const double rounded = collective_expected(ag, 3, 5);
  CHECK(rounded == bf16_value(bf16_bits(static_cast<float>(exact))));
  CHECK(std::abs(rounded - exact) <= std::abs(exact) * 0x1p-8);
}
