// Memory a forked child does not inherit: the large buffers of a process that forks often (a plan worker's program
// cache of timelines), so that each fork copies no page tables for them.
#pragma once

#include <cstddef>

namespace tpsim {

// `bytes` of zeroed anonymous memory marked MADV_DONTFORK: a child forked while it lives has no mapping there (reading
// it would crash), so only the process that made it may touch it. Throws std::bad_alloc when it cannot be mapped.
class UnforkedBuffer {
 public:
  UnforkedBuffer() = default;
  explicit UnforkedBuffer(size_t bytes);
  UnforkedBuffer(UnforkedBuffer&& other) noexcept;
  UnforkedBuffer& operator=(UnforkedBuffer&& other) noexcept;
  UnforkedBuffer(const UnforkedBuffer&) = delete;
  UnforkedBuffer& operator=(const UnforkedBuffer&) = delete;
  ~UnforkedBuffer();

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tpsim
