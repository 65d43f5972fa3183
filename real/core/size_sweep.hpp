// Message sizes to measure: nccl-tests' geometric sweep (-b MIN -e MAX -f FACTOR) or an explicit list,
// each rounded down to what the collective can split evenly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpsim::real {

// MIN, MIN*F, MIN*F^2, ... up to MAX (MAX included), each rounded down to a multiple of `alignment`
// (at least one alignment), duplicates removed. Throws InputError on MIN > MAX or FACTOR <= 1.
std::vector<int64_t> geometric_sizes(int64_t min_bytes, int64_t max_bytes, double factor, int64_t alignment);

// A size written by a person ("1MiB", "65536"): a positive whole number of bytes; throws InputError
// naming `option` and the accepted forms.
int64_t parse_size(const std::string& text, const std::string& option);

}  // namespace tpsim::real
