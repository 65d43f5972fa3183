// Worker processes (base/child_process.hpp) and the memory their children do not inherit (base/unforked_buffer.hpp).
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/child_process.hpp"
#include "base/unforked_buffer.hpp"

using namespace tpsim;

namespace {

// Everything a child wrote to its pipe, then its exit status.
std::string read_child(const ChildProcess& child, int& status) {
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = ::read(child.fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  status = reap_child(child);
  return text;
}

// Whether the page at `address` is mapped in this process (mincore fails with ENOMEM where it is not).
bool mapped(const void* address) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto* start = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(address) / page * page);
  unsigned char resident = 0;
  return ::mincore(start, 1, &resident) == 0 || errno != ENOMEM;
}

}  // namespace

TEST_CASE("a forked child's lines reach the parent and the child exits cleanly") {
  const ChildProcess child = fork_child([](int fd) { write_or_exit(fd, "one\ntwo\n"); });
  int status = -1;
  CHECK(read_child(child, status) == "one\ntwo\n");
  CHECK(exited_cleanly(status));
  CHECK(signal_note(status).empty());
}

TEST_CASE("a child forked while an unforked buffer lives has no mapping there, and the parent keeps its bytes") {
  UnforkedBuffer buffer(3 * 4096 + 5);  // not a whole number of pages: the mapping rounds it up
  REQUIRE(buffer.size() == 3 * 4096 + 5);
  std::memset(buffer.data(), 7, buffer.size());
  std::vector<char> heap(buffer.size(), 7);  // ordinary memory, which the child does inherit
  const ChildProcess child = fork_child([&](int fd) {
    write_or_exit(fd, std::string(mapped(buffer.data()) ? "buffer mapped" : "buffer unmapped") + "," +
                          (mapped(heap.data()) && heap.back() == 7 ? "heap mapped" : "heap unmapped"));
  });
  int status = -1;
  CHECK(read_child(child, status) == "buffer unmapped,heap mapped");
  CHECK(exited_cleanly(status));
  CHECK(mapped(buffer.data()));
  const auto* bytes = static_cast<const unsigned char*>(buffer.data());
  CHECK((bytes[0] == 7 && bytes[buffer.size() - 1] == 7));
}

TEST_CASE("an unforked buffer moves its mapping, and an empty one holds none") {
  UnforkedBuffer first(4096);
  void* const address = first.data();
  UnforkedBuffer second = std::move(first);
  CHECK(second.data() == address);
  CHECK(first.data() == nullptr);  // NOLINT(bugprone-use-after-move): a moved-from buffer is empty by contract
  CHECK(first.size() == 0);
  const UnforkedBuffer empty(0);
  CHECK(empty.data() == nullptr);
}
