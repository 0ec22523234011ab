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
//   60 u32 CRC-32C of bytes 0..59
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

inline void EncodeAckBlock(const AckBlock& a, std::byte* out) {
  std::memset(out, 0, kAckBlockSize);
  coding::StoreLE<uint64_t>(out + 0, a.generation);
  coding::StoreLE<uint64_t>(out + 8, a.acked_position.value());
  coding::StoreLE<int64_t>(out + 16, a.next_offset.value());
  coding::StoreLE<int64_t>(out + 24, a.segment_base.value());
  coding::StoreLE<uint64_t>(out + 32, a.credit_end.value());
  coding::StoreLE<uint16_t>(out + 40, a.error);
  coding::StoreLE<uint16_t>(out + 42, a.flags);
  coding::StoreLE<uint32_t>(out + 60, crc32c::Value(out, 60));
}

// False when the CRC does not match (the block is being written: read it again).
inline bool DecodeAckBlock(const std::byte* in, AckBlock* a) {
  std::byte copy[kAckBlockSize];
  std::memcpy(copy, in, kAckBlockSize);
  if (coding::LoadLE<uint32_t>(copy + 60) != crc32c::Value(copy, 60)) return false;
  a->generation = coding::LoadLE<uint64_t>(copy + 0);
  a->acked_position = Position(coding::LoadLE<uint64_t>(copy + 8));
  a->next_offset = Offset(coding::LoadLE<int64_t>(copy + 16));
  a->segment_base = Offset(coding::LoadLE<int64_t>(copy + 24));
  a->credit_end = Position(coding::LoadLE<uint64_t>(copy + 32));
  a->error = coding::LoadLE<uint16_t>(copy + 40);
  a->flags = coding::LoadLE<uint16_t>(copy + 42);
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
inline void EncodeNotification(const Notification& n, std::byte* out) {
  std::memset(out, 0, kNotificationSize);
  coding::StoreLE<uint64_t>(out + 0, n.topic_id.value());
  coding::StoreLE<int32_t>(out + 8, n.partition.value());
  coding::StoreLE<uint64_t>(out + 16, n.generation);
}
inline bool DecodeNotification(const std::byte* in, size_t len, Notification* n) {
  if (len != kNotificationSize) return false;
  n->topic_id = TopicId(coding::LoadLE<uint64_t>(in + 0));
  n->partition = PartitionId(coding::LoadLE<int32_t>(in + 8));
  n->generation = coding::LoadLE<uint64_t>(in + 16);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Data endpoint handshake: the client's first control message on its data endpoint is its
// 8-byte client_id (from Hello); the node answers with an encoded ResponseHeader (error 0: the
// endpoint is bound to the client).
inline constexpr size_t kDataHelloSize = 8;

}  // namespace rdmq::protocol
