// shm mailboxes (docs/fabric.md, "shm mailbox layout"): per direction of an endpoint, a memfd
// ring that the sender fills with SEND and WRITE_WITH_IMM notifications and the receiver drains
// when its receive completion queue is polled, plus the receiver's completion-queue doorbell,
// which the sender rings after a batch.
//
// Threading: an InboundMailbox is drained by one thread at a time (the receive queue's poller,
// under the endpoint's receive lock); HasEntries from any thread. An OutboundMailbox is filled by
// the endpoint's posting thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fabric/posix.h"
#include "fabric/soft_cq.h"
#include "fabric/wire.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

inline constexpr uint64_t kMailboxMagic = 0x31584f424c49414dULL;  // "MAILBOX1"
inline constexpr uint32_t kMailboxVersion = 1;
inline constexpr size_t kMailboxHeaderBytes = 4096;
inline constexpr uint32_t kMailboxCapacity = 1u << 20;  // what this side creates
// What a peer may announce.
inline constexpr uint32_t kMinPeerMailbox = 4096;
inline constexpr uint32_t kMaxPeerMailbox = 64u << 20;

// The first page of a mailbox memfd; the entries follow at kMailboxHeaderBytes.
struct MailboxHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t capacity;
  alignas(64) std::atomic<uint64_t> tail;  // bytes ever published by the sender
  alignas(64) std::atomic<uint64_t> head;  // bytes ever consumed by the receiver
};
static_assert(sizeof(MailboxHeader) <= kMailboxHeaderBytes);
static_assert(offsetof(MailboxHeader, magic) == 0 && offsetof(MailboxHeader, version) == 8 &&
              offsetof(MailboxHeader, capacity) == 12 && offsetof(MailboxHeader, tail) == 64 &&
              offsetof(MailboxHeader, head) == 128);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// kProtocol unless `fd` is a memfd of at least `min_size` bytes sealed against shrinking (what a
// peer maps must not shrink under it).
Status RequireSealedMemfd(int fd, size_t min_size, const char* what);

// The mailbox this side receives in: it creates the memfd; the peer maps it and publishes.
class InboundMailbox {
 public:
  Status Create();
  bool valid() const noexcept { return hdr_ != nullptr; }
  int fd() const noexcept { return fd_.get(); }

  // The sender's published end (acquire: the entries before it are visible).
  uint64_t Tail() const noexcept { return hdr_->tail.load(std::memory_order_acquire); }
  uint64_t head() const noexcept { return head_.load(std::memory_order_relaxed); }
  // Whether entries wait. Any thread.
  bool HasEntries() const noexcept { return Tail() != head(); }
  // The entry at the head, validated against the ring's end and `tail` (kProtocol otherwise).
  Result<wire::MailboxEntry> Entry(uint64_t tail) const;
  // The payload of the entry at the head.
  const std::byte* Payload() const noexcept { return data_ + head() % kMailboxCapacity + wire::kEntryHeader; }
  // Consumes the entry at the head (`total` bytes) and tells the sender.
  void Consume(uint32_t total) noexcept;
  // After a corrupt entry: drops everything published (the endpoint is closing).
  void Discard() noexcept { hdr_->tail.store(head(), std::memory_order_relaxed); }

 private:
  UniqueFd fd_;
  Mapping map_;
  MailboxHeader* hdr_ = nullptr;
  std::byte* data_ = nullptr;
  std::atomic<uint64_t> head_{0};
};

// The peer's mailbox, which this side fills, and the peer's receive doorbell.
class OutboundMailbox {
 public:
  // Maps the peer's mailbox memfd (with `capacity` data bytes, as its hello said) and doorbell.
  Status Map(int mailbox_fd, int bell_fd, uint32_t capacity);
  bool valid() const noexcept { return hdr_ != nullptr; }

  // Room for an entry of `need` bytes, after `*pad` bytes of padding to the ring's end when it
  // does not fit before it? kRnr when the receiver has not consumed enough (or has no mailbox).
  FabricErrc Reserve(size_t need, uint64_t* pad) const noexcept;
  // Writes the padding and an entry (a SEND's payload `data`, `len` bytes) and publishes them.
  void Publish(uint16_t kind, uint16_t flags, uint32_t imm, const void* data, uint32_t len,
               uint64_t pad) noexcept;
  // Wakes the receiver's completion queue.
  void Ring() noexcept { RingBell(bell_); }

 private:
  Mapping map_, bell_map_;
  MailboxHeader* hdr_ = nullptr;
  std::byte* data_ = nullptr;
  uint32_t cap_ = 0;
  uint64_t tail_ = 0;  // the sender's copy of the tail
  Bell* bell_ = nullptr;
};

}  // namespace rdmq::fabric::internal
