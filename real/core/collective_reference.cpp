// The reference semantics of each collective over the generated inputs.
#include "real/core/collective_reference.hpp"

#include "real/core/random_values.hpp"

namespace tpsim::real {

double collective_input(const CollectiveCall& c, uint64_t seed, int rank, int64_t j) {
  const float value = uniform_value(seed, static_cast<uint64_t>(rank * c.counts.send + j));
  return c.type == ElementType::kBf16 ? bf16_value(bf16_bits(value)) : value;
}

double collective_expected(const CollectiveCall& c, uint64_t seed, int64_t i) {
  const int n = c.ranks;
  double sum = 0;
  switch (c.collective) {
    case Collective::kAllReduce:
      for (int r = 0; r < n; ++r) sum += collective_input(c, seed, r, i);
      return sum;
    case Collective::kAllGather:
      return collective_input(c, seed, static_cast<int>(i / c.counts.send), i % c.counts.send);
    case Collective::kReduceScatter:
      for (int r = 0; r < n; ++r) sum += collective_input(c, seed, r, c.rank * c.counts.recv + i);
      return sum;
    case Collective::kAllToAll: {
      const int64_t block = c.counts.send / n;
      return collective_input(c, seed, static_cast<int>(i / block), c.rank * block + i % block);
    }
    case Collective::kSendRecv:
      return collective_input(c, seed, (c.rank + n - 1) % n, i);
  }
  return 0;
}

}  // namespace tpsim::real
