#include "mailbox.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

namespace rdmq::fabric::internal {

Status RequireSealedMemfd(int fd, size_t min_size, const char* what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, std::string("fstat ") + what);
  if (static_cast<uint64_t>(st.st_size) < min_size) {
    return Status(FabricErrc::kProtocol, std::string(what) + " of " + std::to_string(st.st_size) +
                                             " bytes, want " + std::to_string(min_size));
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return Status(FabricErrc::kProtocol, std::string(what) + " is not a memfd sealed against shrinking");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------- inbound

Status InboundMailbox::Create() {
  const size_t bytes = kMailboxHeaderBytes + kMailboxCapacity;
  RDMQ_ASSIGN_OR_RETURN(fd_, CreateMemfd("rdmq-shm-mailbox", bytes));
  RDMQ_ASSIGN_OR_RETURN(map_, MapShared(fd_.get(), bytes, 0, true, "shm mailbox"));
  hdr_ = new (map_.data()) MailboxHeader{kMailboxMagic, kMailboxVersion, kMailboxCapacity, {0}, {0}};
  data_ = map_.data() + kMailboxHeaderBytes;
  return Status::Ok();
}

Result<wire::MailboxEntry> InboundMailbox::Entry(uint64_t tail) const {
  const uint64_t at = head();
  if (tail - at > kMailboxCapacity) return Status(FabricErrc::kProtocol, "mailbox: tail beyond capacity");
  const uint64_t pos = at % kMailboxCapacity;
  auto e =
      wire::DecodeMailboxEntry(std::span<const std::byte>(data_ + pos, kMailboxCapacity - pos), kMaxSendSize);
  if (e.ok() && at + e->total > tail) return Status(FabricErrc::kProtocol, "mailbox: entry beyond the tail");
  return e;
}

void InboundMailbox::Consume(uint32_t total) noexcept {
  const uint64_t at = head() + total;
  head_.store(at, std::memory_order_relaxed);
  hdr_->head.store(at, std::memory_order_release);
}

// ---------------------------------------------------------------------------------- outbound

Status OutboundMailbox::Map(int mailbox_fd, int bell_fd, uint32_t capacity) {
  if (capacity < kMinPeerMailbox || capacity > kMaxPeerMailbox || capacity % 16 != 0) {
    return Status(FabricErrc::kProtocol, "peer mailbox capacity " + std::to_string(capacity));
  }
  const size_t bytes = kMailboxHeaderBytes + capacity;
  RDMQ_RETURN_IF_ERROR(RequireSealedMemfd(mailbox_fd, bytes, "peer mailbox"));
  RDMQ_RETURN_IF_ERROR(RequireSealedMemfd(bell_fd, sizeof(Bell), "peer doorbell"));
  RDMQ_ASSIGN_OR_RETURN(map_, MapShared(mailbox_fd, bytes, 0, true, "peer mailbox"));
  RDMQ_ASSIGN_OR_RETURN(bell_map_, MapShared(bell_fd, PageSize(), 0, true, "peer doorbell"));
  auto* hdr = reinterpret_cast<MailboxHeader*>(map_.data());
  if (hdr->magic != kMailboxMagic || hdr->capacity != capacity) {
    return Status(FabricErrc::kProtocol, "peer mailbox has a bad header");
  }
  hdr_ = hdr;
  data_ = map_.data() + kMailboxHeaderBytes;
  cap_ = capacity;
  tail_ = hdr_->tail.load(std::memory_order_acquire);
  bell_ = reinterpret_cast<Bell*>(bell_map_.data());
  return Status::Ok();
}

FabricErrc OutboundMailbox::Reserve(size_t need, uint64_t* pad) const noexcept {
  if (hdr_ == nullptr) return FabricErrc::kRnr;
  const uint64_t head = hdr_->head.load(std::memory_order_acquire);
  const uint64_t pos = tail_ % cap_;
  *pad = (cap_ - pos < need) ? cap_ - pos : 0;
  if (tail_ + *pad + need - head > cap_) return FabricErrc::kRnr;
  return FabricErrc::kOk_;
}

void OutboundMailbox::Publish(uint16_t kind, uint16_t flags, uint32_t imm, const void* data, uint32_t len,
                              uint64_t pad) noexcept {
  if (pad != 0) {
    wire::EncodeMailboxEntry(data_ + tail_ % cap_,
                             wire::MailboxEntry{0, wire::kEntryPad, 0, 0, static_cast<uint32_t>(pad)});
    tail_ += pad;
  }
  const size_t total = wire::MailboxEntryTotal(kind, kind == wire::kEntrySend ? len : 0);
  std::byte* at = data_ + tail_ % cap_;
  if (kind == wire::kEntrySend && len > 0) std::memcpy(at + wire::kEntryHeader, data, len);
  wire::EncodeMailboxEntry(at, wire::MailboxEntry{len, kind, flags, imm, static_cast<uint32_t>(total)});
  tail_ += total;
  hdr_->tail.store(tail_, std::memory_order_release);
}

}  // namespace rdmq::fabric::internal
