#include "rdmq/protocol/data_plane.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "support/test_util.h"

namespace rdmq::protocol {
namespace {

TEST_CASE("ack blocks round-trip and a torn or flipped block is detected", "[data-plane]") {
  AckBlock a;
  a.generation = 7;
  a.acked_position = Position(123456);
  a.next_offset = Offset(99);
  a.segment_base = Offset(40);
  a.credit_end = Position(67104768);
  a.error = 12;
  a.flags = kAckLeaseRevoked;
  std::byte buf[kAckBlockSize];
  EncodeAckBlock(a, buf);
  AckBlock b;
  REQUIRE(DecodeAckBlock(buf, &b));
  CHECK(b.generation == 7);
  CHECK(b.acked_position == Position(123456));
  CHECK(b.next_offset == Offset(99));
  CHECK(b.segment_base == Offset(40));
  CHECK(b.credit_end == Position(67104768));
  CHECK(b.error == 12);
  CHECK(b.flags == kAckLeaseRevoked);
  // Every single-bit flip anywhere in the block is caught by the CRC.
  for (size_t byte = 0; byte < kAckBlockSize; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::byte c[kAckBlockSize];
      std::memcpy(c, buf, sizeof c);
      c[byte] ^= static_cast<std::byte>(1 << bit);
      CHECK_FALSE(DecodeAckBlock(c, &b));
    }
  }
  // A block half old, half new (a torn write) does not validate either.
  AckBlock newer = a;
  newer.generation = 8;
  newer.acked_position = Position(999999);
  std::byte n[kAckBlockSize];
  EncodeAckBlock(newer, n);
  std::byte torn[kAckBlockSize];
  std::memcpy(torn, n, 16);
  std::memcpy(torn + 16, buf + 16, kAckBlockSize - 16);
  CHECK_FALSE(DecodeAckBlock(torn, &b));
  // All zero (never written) is not a valid block.
  std::byte zero[kAckBlockSize] = {};
  CHECK_FALSE(DecodeAckBlock(zero, &b));
}

TEST_CASE("notifications are exactly 24 bytes", "[data-plane]") {
  std::byte buf[kNotificationSize];
  EncodeNotification({TopicId(42), PartitionId(3), 1000}, buf);
  Notification n;
  REQUIRE(DecodeNotification(buf, kNotificationSize, &n));
  CHECK(n.topic_id == TopicId(42));
  CHECK(n.partition == PartitionId(3));
  CHECK(n.generation == 1000);
  CHECK_FALSE(DecodeNotification(buf, kNotificationSize - 1, &n));
  CHECK_FALSE(DecodeNotification(buf, kNotificationSize + 1, &n));
  CHECK_FALSE(DecodeNotification(buf, 0, &n));
}

TEST_CASE("lease immediates keep the slot in the low 24 bits", "[data-plane]") {
  CHECK(LeaseSlot(0x05000010u) == 0x10u);
  CHECK(LeaseSlot(kLeaseSlotMask) == kLeaseSlotMask);
  CHECK(LeaseSlot(0xff000000u) == 0u);
}

}  // namespace
}  // namespace rdmq::protocol
