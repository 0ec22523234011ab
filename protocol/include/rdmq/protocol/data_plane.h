// The data plane's small fixed structures (docs/protocol.md sections 1, 4, 5 and 6): the ack
// block a storage node WRITEs into a producer's memory after each commit, the notification it
// SENDs to a watching consumer, the immediates that name a lease, and the data endpoint's
// handshake. Little-endian, fixed layouts, CRC-protected where a reader can see a torn copy.
//
// Threading: pure functions and plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"
#include "rdmq/common/types.h"

namespace rdmq::protocol {

// ---------------------------------------------------------------------------------------------
// Ack block: 64 bytes in the producer's memory, written by the node with WRITE_WITH_IMM.
//   0 u64 generation   8 u64 acked_position   16 i64 next_offset   24 i64 segment_base
//   32 u64 credit_end  40 u16 error           42 u16 flags         44..59 zero
//   60 u32 CRC-32C of bytes 0..59 (the 60 bytes before it)
inline constexpr size_t kAckBlockSize = 64;
inline constexpr uint16_t kAckSegmentFull = 1u << 0;   // renew for a new segment
inline constexpr uint16_t kAckLeaseRevoked = 1u << 1;  // the lease ended; reopen to go on

struct AckBlock {
  uint64_t generation = 0;
  Position acked_position{0};
  Offset next_offset{0};
  Offset segment_base{0};
  Position credit_end{0};
  uint16_t error = 0;
  uint16_t flags = 0;
};

// Field offsets, as docs/protocol.md section 5 gives them; each field ends where the next begins.
namespace ack_layout {
inline constexpr size_t kGeneration = 0;
inline constexpr size_t kAckedPosition = 8;
inline constexpr size_t kNextOffset = 16;
inline constexpr size_t kSegmentBase = 24;
inline constexpr size_t kCreditEnd = 32;
inline constexpr size_t kError = 40;
inline constexpr size_t kFlags = 42;
inline constexpr size_t kReserved = 44;  // 16 bytes, zero
inline constexpr size_t kCrc = 60;       // CRC-32C of bytes [0, 60)
static_assert(kAckedPosition == kGeneration + 8 && kNextOffset == kAckedPosition + 8 &&
              kSegmentBase == kNextOffset + 8 && kCreditEnd == kSegmentBase + 8 && kError == kCreditEnd + 8 &&
              kFlags == kError + 2 && kReserved == kFlags + 2 && kCrc == kReserved + 16 &&
              kCrc + 4 == kAckBlockSize);
}  // namespace ack_layout

inline void EncodeAckBlock(const AckBlock& a, std::byte* out) {
  using namespace ack_layout;
  std::memset(out, 0, kAckBlockSize);
  coding::StoreLE<uint64_t>(out + kGeneration, a.generation);
  coding::StoreLE<uint64_t>(out + kAckedPosition, a.acked_position.value());
  coding::StoreLE<int64_t>(out + kNextOffset, a.next_offset.value());
  coding::StoreLE<int64_t>(out + kSegmentBase, a.segment_base.value());
  coding::StoreLE<uint64_t>(out + kCreditEnd, a.credit_end.value());
  coding::StoreLE<uint16_t>(out + kError, a.error);
  coding::StoreLE<uint16_t>(out + kFlags, a.flags);
  coding::StoreLE<uint32_t>(out + kCrc, crc32c::Value(out, kCrc));
}

// False when the CRC does not match (the block is being written: read it again).
inline bool DecodeAckBlock(const std::byte* in, AckBlock* a) {
  using namespace ack_layout;
  std::byte copy[kAckBlockSize];
  std::memcpy(copy, in, kAckBlockSize);
  if (coding::LoadLE<uint32_t>(copy + kCrc) != crc32c::Value(copy, kCrc)) return false;
  a->generation = coding::LoadLE<uint64_t>(copy + kGeneration);
  a->acked_position = Position(coding::LoadLE<uint64_t>(copy + kAckedPosition));
  a->next_offset = Offset(coding::LoadLE<int64_t>(copy + kNextOffset));
  a->segment_base = Offset(coding::LoadLE<int64_t>(copy + kSegmentBase));
  a->credit_end = Position(coding::LoadLE<uint64_t>(copy + kCreditEnd));
  a->error = coding::LoadLE<uint16_t>(copy + kError);
  a->flags = coding::LoadLE<uint16_t>(copy + kFlags);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Lease immediates: a producer's WRITE_WITH_IMM and the node's ack carry `lease_index` from the
// lease response: a table slot (low 24 bits) and that slot's reuse count (high 8 bits), so an
// immediate of an ended lease never names its successor in the same slot.
inline constexpr uint32_t kLeaseSlotBits = 24;
inline constexpr uint32_t kLeaseSlotMask = (1u << kLeaseSlotBits) - 1;
inline constexpr uint32_t LeaseSlot(uint32_t lease_index) { return lease_index & kLeaseSlotMask; }

// ---------------------------------------------------------------------------------------------
// Watch notification: a 24-byte SEND on the consumer's data endpoint.
//   0 u64 topic id   8 i32 partition   12 u32 zero   16 u64 slot generation
inline constexpr size_t kNotificationSize = 24;
struct Notification {
  TopicId topic_id{0};
  PartitionId partition{0};
  uint64_t generation = 0;
};
namespace notification_layout {  // docs/protocol.md section 6
inline constexpr size_t kTopicId = 0;
inline constexpr size_t kPartition = 8;
inline constexpr size_t kReserved = 12;  // 4 bytes, zero
inline constexpr size_t kGeneration = 16;
static_assert(kPartition == kTopicId + 8 && kReserved == kPartition + 4 && kGeneration == kReserved + 4 &&
              kGeneration + 8 == kNotificationSize);
}  // namespace notification_layout

inline void EncodeNotification(const Notification& n, std::byte* out) {
  using namespace notification_layout;
  std::memset(out, 0, kNotificationSize);
  coding::StoreLE<uint64_t>(out + kTopicId, n.topic_id.value());
  coding::StoreLE<int32_t>(out + kPartition, n.partition.value());
  coding::StoreLE<uint64_t>(out + kGeneration, n.generation);
}
inline bool DecodeNotification(const std::byte* in, size_t len, Notification* n) {
  using namespace notification_layout;
  if (len != kNotificationSize) return false;
  n->topic_id = TopicId(coding::LoadLE<uint64_t>(in + kTopicId));
  n->partition = PartitionId(coding::LoadLE<int32_t>(in + kPartition));
  n->generation = coding::LoadLE<uint64_t>(in + kGeneration);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Data endpoint handshake: the client's first control message on its data endpoint is its
// client_id and data_token (from Hello), each u64 little-endian; the node answers with an encoded
// ResponseHeader (error 0: the endpoint is bound to the client). The token, random per session,
// keeps another client from binding an endpoint to a session it does not own.
inline constexpr size_t kDataHelloSize = 16;

}  // namespace rdmq::protocol
