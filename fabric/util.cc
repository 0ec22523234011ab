#include "util.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/random.h>
#include <sys/syscall.h>

#include <cerrno>
#include <climits>
#include <cstring>
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

Result<Mapping> MapShared(int fd, size_t len, uint64_t offset, bool writable, const std::string& what,
                          bool populate) {
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  // MAP_POPULATE maps shared pages read-only, so every page still takes a write fault
  // (page_mkwrite) on its first store: writable mappings are populated for write instead, all
  // those faults in one pass in the kernel (Linux 5.14+; older kernels fault lazily). Large
  // writable mappings (a producer's window on a log segment) are left to fault lazily: the
  // owner of such a mapping prefaults ahead of its writes where that pays (the producer does,
  // off its sending thread), instead of stalling here for the whole range.
  constexpr size_t kMaxWritePopulate = size_t{8} << 20;
  if (writable && len > kMaxWritePopulate) populate = false;
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

uint64_t NextEndpointId() noexcept {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {
long Futex(const void* addr, int op, uint32_t val, const timespec* ts) noexcept {
  return ::syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}
timespec ToTimespec(std::chrono::nanoseconds d) noexcept {
  if (d.count() < 0) d = std::chrono::nanoseconds(0);
  timespec ts;
  ts.tv_sec = static_cast<time_t>(d.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(d.count() % 1'000'000'000);
  return ts;
}
}  // namespace

int FutexWait32(const std::atomic<uint32_t>* word, uint32_t expected,
                std::chrono::nanoseconds timeout) noexcept {
  const timespec ts = ToTimespec(timeout);
  if (Futex(word, FUTEX_WAIT, expected, &ts) == 0) return 0;
  return errno;
}

void FutexWake32(const std::atomic<uint32_t>* word) noexcept { Futex(word, FUTEX_WAKE, INT_MAX, nullptr); }

Status WaitWordWhileEqual(const void* word, uint64_t expected, std::chrono::nanoseconds timeout) {
  if (reinterpret_cast<uintptr_t>(word) % 8 != 0) return Status(FabricErrc::kUnaligned, "WaitWhileEqual");
  auto* w64 = static_cast<uint64_t*>(const_cast<void*>(word));
  if (std::atomic_ref<uint64_t>(*w64).load(std::memory_order_acquire) != expected) return Status::Ok();
  // Little-endian: the low 32 bits are the first four bytes.
  const auto* low = reinterpret_cast<const std::atomic<uint32_t>*>(word);
  const int err = FutexWait32(low, static_cast<uint32_t>(expected), timeout);
  if (err == ETIMEDOUT) {
    if (std::atomic_ref<uint64_t>(*w64).load(std::memory_order_acquire) != expected) return Status::Ok();
    return Status(Errc::kTimeout, "WaitWhileEqual");
  }
  return Status::Ok();  // woken, value changed (EAGAIN) or interrupted: callers recheck
}

void WakeWord(const void* word) noexcept {
  FutexWake32(reinterpret_cast<const std::atomic<uint32_t>*>(word));
}

uint32_t RequiredAccess(Opcode op) noexcept {
  switch (op) {
    case Opcode::kWrite:
    case Opcode::kWriteImm:
      return kRemoteWrite;
    case Opcode::kRead:
      return kRemoteRead;
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      return kRemoteAtomic;
    default:
      return 0;
  }
}

FabricErrc CheckAccess(Opcode op, uint32_t granted, uint64_t window_len, uint64_t offset, uint64_t len,
                       uint64_t target_addr) noexcept {
  const uint32_t need = RequiredAccess(op);
  if ((granted & need) != need) return FabricErrc::kAccessDenied;
  if (offset > window_len || len > window_len - offset) return FabricErrc::kOutOfBounds;
  if ((op == Opcode::kFetchAdd || op == Opcode::kCompareSwap) && target_addr % 8 != 0)
    return FabricErrc::kUnaligned;
  return FabricErrc::kOk_;
}

Result<HostPort> ParseHostPort(std::string_view s) {
  HostPort hp;
  std::string_view port;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return Status(Errc::kInvalidArgument, "bad address '" + std::string(s) + "' (want [v6-host]:port)");
    }
    hp.host = std::string(s.substr(1, close - 1));
    port = s.substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) {
      return Status(Errc::kInvalidArgument, "bad address '" + std::string(s) + "' (want host:port)");
    }
    hp.host = std::string(s.substr(0, colon));
    port = s.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5) {
    return Status(Errc::kInvalidArgument, "bad port in address '" + std::string(s) + "'");
  }
  uint32_t p = 0;
  for (char c : port) {
    if (c < '0' || c > '9')
      return Status(Errc::kInvalidArgument, "bad port in address '" + std::string(s) + "'");
    p = p * 10 + static_cast<uint32_t>(c - '0');
  }
  if (p > 65535)
    return Status(Errc::kInvalidArgument, "port out of range in address '" + std::string(s) + "'");
  hp.port = static_cast<uint16_t>(p);
  return hp;
}

Result<std::string_view> StripScheme(std::string_view address, std::string_view scheme) {
  if (address.size() <= scheme.size() || address.substr(0, scheme.size()) != scheme ||
      address[scheme.size()] != ':') {
    return Status(FabricErrc::kWrongProvider,
                  "address '" + std::string(address) + "' is not a " + std::string(scheme) + ": address");
  }
  return address.substr(scheme.size() + 1);
}

Status ValidateWorkRequest(const WorkRequest& wr) {
  switch (wr.opcode) {
    case Opcode::kWrite:
    case Opcode::kWriteImm:
    case Opcode::kRead:
      if (wr.remote == nullptr) return Status(Errc::kInvalidArgument, "work request without a remote region");
      if (wr.local.length > 0 && wr.local.addr == nullptr) {
        return Status(Errc::kInvalidArgument, "work request with a null local buffer");
      }
      if (wr.local.length > UINT32_MAX) {
        return Status(Errc::kInvalidArgument, "work request longer than 4 GiB");
      }
      return Status::Ok();
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      if (wr.remote == nullptr) return Status(Errc::kInvalidArgument, "atomic without a remote region");
      if (wr.local.addr != nullptr && wr.local.length < 8) {
        return Status(Errc::kInvalidArgument, "atomic result buffer shorter than 8 bytes");
      }
      return Status::Ok();
    case Opcode::kSend:
      if (wr.local.length > 0 && wr.local.addr == nullptr) {
        return Status(Errc::kInvalidArgument, "SEND with a null local buffer");
      }
      if (wr.local.length > kMaxSendSize) {
        return Status(FabricErrc::kTooLong, "SEND of " + std::to_string(wr.local.length) + " bytes (max " +
                                                std::to_string(kMaxSendSize) + ")");
      }
      return Status::Ok();
    default:
      return Status(Errc::kInvalidArgument,
                    "unknown work request opcode " + std::to_string(static_cast<int>(wr.opcode)));
  }
}

void LocalRegion::Wake(uint64_t offset) noexcept {
  if (offset + 8 <= size_ && offset % 8 == 0) WakeWord(data_ + offset);
}

Status LocalRegion::WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) {
  if (offset % 8 != 0)
    return Status(FabricErrc::kUnaligned, "WaitWhileEqual offset " + std::to_string(offset));
  if (offset + 8 > size_)
    return Status(FabricErrc::kOutOfBounds, "WaitWhileEqual offset " + std::to_string(offset));
  return WaitWordWhileEqual(data_ + offset, expected, timeout);
}

RegionDescriptor LocalRegion::Describe(uint64_t key, uint64_t offset, uint64_t length,
                                       uint32_t access) const {
  RegionDescriptor d;
  d.provider = provider_;
  d.access = access;
  d.key = key;
  d.base = reinterpret_cast<uint64_t>(data_) + offset;
  d.length = length;
  d.node = node_;
  return d;
}

Status LocalRegion::CheckSubset(uint32_t access) const {
  if ((access & ~access_) != 0) {
    return Status(FabricErrc::kAccessDenied, "descriptor asks for rights the region was not registered with");
  }
  return Status::Ok();
}

Status CheckGrant(const Region& r, uint64_t offset, uint64_t length, uint32_t access) {
  if ((access & ~r.access()) != 0) {
    return Status(FabricErrc::kAccessDenied, "GrantAccess: rights beyond the region's registration");
  }
  if (length == 0 || offset > r.size() || length > r.size() - offset) {
    return Status(FabricErrc::kOutOfBounds, "GrantAccess: [" + std::to_string(offset) + ", +" +
                                                std::to_string(length) + ") outside a region of " +
                                                std::to_string(r.size()) + " bytes");
  }
  return Status::Ok();
}

}  // namespace rdmq::fabric::internal
