#include "posix.h"

#include <fcntl.h>
#include <sys/random.h>

#include <cerrno>
#include <ctime>

namespace rdmq::fabric::internal {

Result<UniqueFd> CreateMemfd(const char* name, size_t size) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Status::FromErrno(errno, std::string("memfd_create ") + name);
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return Status::FromErrno(
        errno, "ftruncate memfd " + std::string(name) + " to " + std::to_string(size) + " bytes");
  }
  // Nobody may shrink it under a peer's mapping (that would SIGBUS the peer).
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    return Status::FromErrno(errno, std::string("seal memfd ") + name);
  }
  return fd;
}

Result<UniqueFd> ReopenReadOnly(int fd) {
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  UniqueFd ro(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ro.valid()) return Status::FromErrno(errno, "reopen " + path + " read-only");
  return ro;
}

Result<Mapping> MapShared(int fd, size_t len, uint64_t offset, bool writable, const std::string& what,
                          bool populate) {
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  // MAP_POPULATE maps shared pages read-only, so every page still takes a write fault
  // (page_mkwrite) on its first store: writable mappings are populated for write instead, all
  // those faults in one pass in the kernel (Linux 5.14+; older kernels fault lazily). Large
  // mappings are left to fault lazily, read-only ones too: a producer's window on a log segment
  // (it prefaults ahead of its writes itself, off its sending thread), and a consumer's whole
  // segment, which populating would read into the page cache in full, unwritten tail included
  // (64 MiB per partition a consumer reads: 6.4 GB of page cache for a consumer of 100
  // partitions, docs/benchmarks.md "Curves"); the kernel's fault-around maps 16 pages a fault.
  constexpr size_t kMaxPopulate = size_t{8} << 20;
  if (len > kMaxPopulate) populate = false;
  const int flags = MAP_SHARED | (populate && !writable ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, len, prot, flags, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    return Status::FromErrno(errno, "mmap " + what + " (" + std::to_string(len) + " bytes at file offset " +
                                        std::to_string(offset) +
                                        (writable ? ", read-write)" : ", read-only)"));
  }
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
  if (populate && writable) (void)::madvise(p, len, MADV_POPULATE_WRITE);
  return Mapping(p, len);
}

Result<Mapping> MapAnonymous(size_t len) {
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return Status::FromErrno(errno, "mmap " + std::to_string(len) + " anonymous bytes");
  return Mapping(p, len);
}

size_t PageSize() noexcept {
  static const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return kPage;
}

uint64_t RandomKey() noexcept {
  uint64_t k = 0;
  while (k == 0) {
    if (::getrandom(&k, sizeof k, 0) != static_cast<ssize_t>(sizeof k)) {
      // getrandom cannot fail for 8 bytes once the pool is initialised; fall back to a clock mix.
      k = static_cast<uint64_t>(::clock()) * 0x9e3779b97f4a7c15ULL ^ reinterpret_cast<uintptr_t>(&k);
    }
  }
  return k;
}

}  // namespace rdmq::fabric::internal
