// Checks that a copy arrived: the first and last MiB of the destination equal the source's.
#pragma once

#include <cstddef>

namespace tpsim::real {

// Synchronous; `src` and `dst` may be on different GPUs.
bool copy_arrived(const void* src, const void* dst, size_t bytes);

}  // namespace tpsim::real
