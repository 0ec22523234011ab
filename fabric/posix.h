// RAII owners and helpers for the operating-system resources the providers use: file
// descriptors, shared and anonymous mappings, memfds, page-size arithmetic and random keys.
// Functions return the errno they met as a Status naming what they were doing.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "rdmq/common/status.h"

namespace rdmq::fabric::internal {

// Owns a file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) Reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }
  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Owns an mmap'ed range; munmaps it on destruction. Move-only.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* addr, size_t len) noexcept : addr_(addr), len_(len) {}
  Mapping(Mapping&& o) noexcept : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept {
    if (this != &o) {
      Reset();
      addr_ = std::exchange(o.addr_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { Reset(); }
  std::byte* data() const noexcept { return static_cast<std::byte*>(addr_); }
  size_t size() const noexcept { return len_; }
  void Reset() noexcept {
    if (addr_ != nullptr) ::munmap(addr_, len_);
    addr_ = nullptr;
    len_ = 0;
  }

 private:
  void* addr_ = nullptr;
  size_t len_ = 0;
};

// A memfd of `size` bytes (sealed against shrinking), named for /proc/<pid>/fd listings.
Result<UniqueFd> CreateMemfd(const char* name, size_t size);
// A read-only descriptor of the file `fd` is open on (a reopen through /proc/self/fd).
Result<UniqueFd> ReopenReadOnly(int fd);
// Maps [offset, offset+len) of `fd` with MAP_SHARED; `offset` must be page aligned. `populate`
// prefaults the page tables (MAP_POPULATE).
Result<Mapping> MapShared(int fd, size_t len, uint64_t offset, bool writable, const std::string& what,
                          bool populate = false);
// Anonymous private zeroed pages.
Result<Mapping> MapAnonymous(size_t len);

size_t PageSize() noexcept;
inline uint64_t RoundUp(uint64_t v, uint64_t align) noexcept { return (v + align - 1) / align * align; }
inline uint64_t RoundDown(uint64_t v, uint64_t align) noexcept { return v / align * align; }

// A random non-zero 64-bit capability (getrandom).
uint64_t RandomKey() noexcept;

}  // namespace rdmq::fabric::internal
