// Internal helpers shared by the fabric providers: RAII owners for file descriptors and
// mappings, random keys, futexes on 8-byte words, the common access check, address parsing.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

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
// A process-wide unique endpoint id.
uint64_t NextEndpointId() noexcept;

// Futex wait/wake on the low 32 bits of an 8-byte word that may live in memory shared between
// processes (never FUTEX_PRIVATE). Writers that want to wake sleepers must change the low 32
// bits. Wait returns OK when the word differs from `expected`, a wake arrived or a signal
// interrupted the wait; kTimeout when `timeout` passed.
Status WaitWordWhileEqual(const void* word, uint64_t expected, std::chrono::nanoseconds timeout);
void WakeWord(const void* word) noexcept;
// Raw 32-bit futex helpers for doorbells.
int FutexWait32(const std::atomic<uint32_t>* word, uint32_t expected,
                std::chrono::nanoseconds timeout) noexcept;
void FutexWake32(const std::atomic<uint32_t>* word) noexcept;

// The right a one-sided opcode needs (kRemoteWrite, kRemoteRead or kRemoteAtomic; 0 for SEND).
uint32_t RequiredAccess(Opcode op) noexcept;
// The check every target applies before any byte moves: rights, then bounds of
// [offset, offset+len) within a window of `window_len` bytes, then 8-byte alignment of atomics
// (`target_addr` is the address the operation would touch). Returns kOk_ when allowed.
FabricErrc CheckAccess(Opcode op, uint32_t granted, uint64_t window_len, uint64_t offset, uint64_t len,
                       uint64_t target_addr) noexcept;

// "host:port" (IPv6 hosts in brackets). Port may be 0.
struct HostPort {
  std::string host;
  uint16_t port = 0;
};
Result<HostPort> ParseHostPort(std::string_view s);
// Splits "scheme:rest" and checks the scheme.
Result<std::string_view> StripScheme(std::string_view address, std::string_view scheme);

// A Completion for an operation.
inline Completion MakeCompletion(uint64_t tag, Opcode op, uint64_t endpoint_id,
                                 FabricErrc err = FabricErrc::kOk_, uint32_t byte_len = 0) {
  Completion c;
  c.tag = tag;
  c.opcode = op;
  if (err != FabricErrc::kOk_) c.status = make_error_code(err);
  c.byte_len = byte_len;
  c.endpoint_id = endpoint_id;
  return c;
}

// Validates the shape of a work request that every provider rejects at post time
// (kInvalidArgument): unknown opcode, missing remote, missing local memory, SEND too large,
// atomic result buffer shorter than 8 bytes.
Status ValidateWorkRequest(const WorkRequest& wr);

// What every provider's Region shares: the memory it covers and owns, its registered rights,
// futex wait/wake on its words, and descriptors naming part of it.
class LocalRegion : public Region {
 public:
  LocalRegion(Provider provider, std::string node, Mapping owned, std::byte* data, size_t size,
              uint32_t access)
      : owned_(std::move(owned)),
        data_(data),
        size_(size),
        access_(access),
        provider_(provider),
        node_(std::move(node)) {}

  std::byte* data() const noexcept final { return data_; }
  size_t size() const noexcept final { return size_; }
  uint32_t access() const noexcept final { return access_; }
  void Wake(uint64_t offset) noexcept final;
  Status WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) final;
  // A descriptor for [offset, offset+length) under `key` with `access`.
  RegionDescriptor Describe(uint64_t key, uint64_t offset, uint64_t length, uint32_t access) const;

 protected:
  // kAccessDenied unless `access` is within the registration's rights.
  Status CheckSubset(uint32_t access) const;

  Mapping owned_;
  std::byte* data_;
  size_t size_;
  uint32_t access_;

 private:
  Provider provider_;
  std::string node_;
};

// A grant enforced by a key table in the owner's fabric core (shm, tcp): tcp's agent checks the
// key on every operation; shm peers check the key's shared slot before every operation (and the
// owner at attach), so revoking is dropping the key.
template <class Core>
class KeyGrant final : public Grant {
 public:
  KeyGrant(std::shared_ptr<Core> core, RegionDescriptor d) : core_(std::move(core)), desc_(std::move(d)) {}
  ~KeyGrant() override { (void)Revoke(); }
  const RegionDescriptor& descriptor() const noexcept override { return desc_; }
  Status Revoke() override {
    core_->RevokeKey(desc_.key);
    return Status::Ok();
  }

 private:
  std::shared_ptr<Core> core_;
  RegionDescriptor desc_;
};

// The argument checks of Endpoint::GrantAccess common to every provider: rights within the
// region's, a non-empty window inside it.
Status CheckGrant(const Region& region, uint64_t offset, uint64_t length, uint32_t access);

// The EndpointOptions checks common to every provider: a send queue, and both queues created by
// this provider (`Cq`), named `provider` in the error.
template <class Cq>
Status CheckEndpointCqs(const EndpointOptions& o, const char* provider) {
  if (o.send_cq == nullptr) return Status(Errc::kInvalidArgument, "EndpointOptions.send_cq is required");
  if (dynamic_cast<Cq*>(o.send_cq) == nullptr ||
      (o.recv_cq != nullptr && dynamic_cast<Cq*>(o.recv_cq) == nullptr)) {
    return Status(FabricErrc::kWrongProvider,
                  std::string("completion queues must come from a ") + provider + " fabric");
  }
  return Status::Ok();
}

}  // namespace rdmq::fabric::internal
