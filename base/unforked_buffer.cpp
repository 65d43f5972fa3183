// Anonymous mappings marked MADV_DONTFORK.
#include "base/unforked_buffer.hpp"

#include <sys/mman.h>

#include <new>
#include <utility>

namespace tpsim {

UnforkedBuffer::UnforkedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  data_ = mapped;
  // Only a speed-up: where the kernel refuses it, children inherit the mapping as any other memory.
  ::madvise(data_, size_, MADV_DONTFORK);
}

UnforkedBuffer::UnforkedBuffer(UnforkedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

UnforkedBuffer& UnforkedBuffer::operator=(UnforkedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

UnforkedBuffer::~UnforkedBuffer() {
  release();
}

void UnforkedBuffer::release() {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tpsim
