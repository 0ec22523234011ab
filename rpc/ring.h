// The two ends of an RPC ring (sans-I/O): positions, wrap-around, free space.
//
// A ring is `capacity` bytes (a multiple of kMessageAlign) in the receiver's memory. Positions are
// absolute byte counts since the ring was created (they never wrap; the offset in the ring is
// position % capacity). The producer (the peer that WRITEs messages) owns `tail`; the consumer
// owns `head` and publishes it (piggybacked on the opposite ring's messages and in a word the
// producer may READ). A message never straddles the ring's end: when the next message does not
// fit before the end, the producer first fills the rest with a pad message (flag kFlagPad), so
// the consumer always finds a header at its head.
//
// Messages are at most capacity/2 bytes, which guarantees that a pad plus a message always fit
// in an empty ring (the pad is shorter than the message that needs it).
//
// Threading: both classes are thread-compatible (the RPC layer gives each end one owner at a
// time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "rdmq/common/status.h"
#include "rpc/wire.h"

namespace rdmq::rpc {

class RingProducer {
 public:
  // `capacity`: a multiple of kMessageAlign, at least 2 * kMinMessage.
  explicit RingProducer(uint64_t capacity) noexcept : capacity_(capacity) {}

  uint64_t capacity() const noexcept { return capacity_; }
  uint64_t max_message() const noexcept { return capacity_ / 2 / kMessageAlign * kMessageAlign; }
  uint64_t tail() const noexcept { return tail_; }
  uint64_t cached_head() const noexcept { return head_; }
  // Free bytes according to the cached head.
  uint64_t free() const noexcept { return capacity_ - (tail_ - head_); }

  // Learns a newer consumer head (piggybacked or READ). Older values are ignored; a value beyond
  // the tail is a protocol error from the peer: returns false and changes nothing.
  bool UpdateHead(uint64_t head) noexcept {
    if (head > tail_) return false;
    if (head > head_) head_ = head;
    return true;
  }

  struct Placement {
    uint64_t pad_position = 0;  // pad_length bytes of pad at this position first (when > 0)
    uint32_t pad_length = 0;
    uint64_t position = 0;  // the message's position
    uint64_t offset = 0;    // position % capacity
  };
  // Places a message of `length` bytes (a multiple of kMessageAlign, at most max_message()) at the
  // tail, with a pad before it if it would straddle the end. Returns nullopt, changing nothing,
  // when the cached head says there is not enough room (READ the head, or wait, then retry).
  std::optional<Placement> Reserve(uint64_t length) noexcept {
    Placement p;
    const uint64_t off = tail_ % capacity_;
    uint64_t need = length;
    if (off + length > capacity_) {
      p.pad_length = static_cast<uint32_t>(capacity_ - off);
      need += p.pad_length;
    }
    if (need > free()) return std::nullopt;
    p.pad_position = tail_;
    p.position = tail_ + p.pad_length;
    p.offset = p.position % capacity_;
    tail_ += need;
    return p;
  }
  // Bytes Reserve(length) would need in all (the message plus any pad).
  uint64_t NeededFor(uint64_t length) const noexcept {
    const uint64_t off = tail_ % capacity_;
    return off + length > capacity_ ? length + (capacity_ - off) : length;
  }

 private:
  uint64_t capacity_;
  uint64_t tail_ = 0;
  uint64_t head_ = 0;
};

// What the consumer finds at its head.
enum class ProbeState {
  kEmpty,       // nothing written at the head
  kIncomplete,  // a header is there but its trailing canary is not (yet) in place
  kBadHeader,   // the head holds bytes that are not (yet) a plausible header
  kReady,       // both canaries match: call Parse
};

struct Probe {
  ProbeState state = ProbeState::kEmpty;
  uint32_t length = 0;  // kIncomplete/kReady: the header's length
};

class RingReader {
 public:
  // `ring` is the ring's memory (capacity bytes, 8-byte aligned), written by the peer.
  // `responses`: true for a response ring (the client's), false for a request ring.
  RingReader(std::byte* ring, uint64_t capacity, bool responses) noexcept
      : ring_(ring), capacity_(capacity), responses_(responses) {}

  uint64_t head() const noexcept { return head_; }
  uint64_t capacity() const noexcept { return capacity_; }
  uint64_t max_message() const noexcept { return capacity_ / 2 / kMessageAlign * kMessageAlign; }

  // Looks at the head without side effects. Cheap when empty (one acquire load).
  Probe Peek() const noexcept;
  // Validates the message Peek reported kReady with `length` (re-reading the header, which is
  // now stable) and returns a view into the ring, valid until Release.
  Result<MessageView> Parse(uint32_t length) const;
  // Consumes the message at the head: zeroes the first word of each of its 64-byte slots, so
  // that stale bytes never look like a header on a later lap, and advances the head.
  void Release(uint32_t length) noexcept;

 private:
  std::byte* ring_;
  uint64_t capacity_;
  bool responses_;
  uint64_t head_ = 0;
};

}  // namespace rdmq::rpc
