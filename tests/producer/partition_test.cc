// The partition's small pieces that need no broker: the ack block watch and the arena cursor.
#include "producer/partition.h"

#include <catch2/catch.hpp>
#include <cstddef>

#include "producer/arena.h"

namespace rdmq::producer {
namespace {

protocol::AckBlock Ack(uint64_t generation, uint64_t acked_position) {
  protocol::AckBlock a;
  a.generation = generation;
  a.acked_position = Position(acked_position);
  return a;
}

TEST_CASE("the prefault reach is 16 MiB for a few partitions and a share of 64 MiB for many",
          "[producer][prefault]") {
  CHECK(PrefaultAhead(0) == (16u << 20));
  CHECK(PrefaultAhead(1) == (16u << 20));
  CHECK(PrefaultAhead(4) == (16u << 20));
  CHECK(PrefaultAhead(8) == (8u << 20));
  CHECK(PrefaultAhead(100) == (64u << 20) / 100);
  CHECK(PrefaultAhead(1000) == (128u << 10));
  // What a producer holds prefaulted in all stays bounded however many partitions it writes.
  for (size_t n : {1, 10, 100, 512, 1024}) {
    if (n * PrefaultAhead(n) > (128u << 20))
      FAIL(n << " partitions hold " << n * PrefaultAhead(n) << " bytes");
  }
}

TEST_CASE("the ack watch reports each new generation once, and no torn block", "[producer][acks]") {
  alignas(64) std::byte block[protocol::kAckBlockSize] = {};
  AckWatch w;
  CHECK_FALSE(w.attached());
  CHECK_FALSE(w.Pending());
  // A new lease's block still holds the last ack of the block's previous lease: cleared, not new.
  protocol::EncodeAckBlock(Ack(41, 4096), block);
  w.Attach(block);
  CHECK(w.attached());
  CHECK_FALSE(w.Pending());
  protocol::AckBlock a;
  CHECK_FALSE(w.Next(&a));
  // The new lease's acks count from 1: each is new, also the one with the old lease's number.
  for (uint64_t g = 1; g <= 42; ++g) {
    protocol::EncodeAckBlock(Ack(g, 100 * g), block);
    CHECK(w.Pending());
    REQUIRE(w.Next(&a));
    CHECK(a.generation == g);
  }
  CHECK(a.acked_position == Position(4200));
  CHECK_FALSE(w.Pending());
  CHECK_FALSE(w.Next(&a));

  // Half-written (the CRC does not match yet): not taken, still pending, taken once whole.
  protocol::EncodeAckBlock(Ack(43, 12288), block);
  block[8] ^= std::byte{1};
  CHECK(w.Pending());
  CHECK_FALSE(w.Next(&a));
  block[8] ^= std::byte{1};
  REQUIRE(w.Next(&a));
  CHECK(a.acked_position == Position(12288));
}

TEST_CASE("a chunk is free once its partition left it and its batches are done", "[producer][arena]") {
  constexpr size_t kChunk = 4096;
  Chunk one{.index = 0, .span = 1, .refs = 0};
  Chunk two{.index = 1, .span = 1, .refs = 0};
  ChunkCursor cur;
  CHECK_FALSE(cur.Fits(100, kChunk));
  cur.Start(&one);
  REQUIRE(cur.Fits(kChunk, kChunk));
  Chunk* a = cur.Take();  // a batch of 1000 bytes
  cur.Advance(1000);
  CHECK(cur.offset() == 1024);  // the next batch starts 64-byte aligned
  Chunk* b = cur.Take();
  cur.Advance(3000);
  CHECK(a == &one);
  CHECK(b == &one);
  CHECK_FALSE(cur.Fits(100, kChunk));
  // The first batch is done; the chunk is still the partition's and holds the second.
  CHECK_FALSE(ChunkCursor::Unref(a));
  // The partition moves on: the second batch still holds it.
  CHECK(cur.Retire() == nullptr);
  cur.Start(&two);
  CHECK(cur.offset() == 0);
  CHECK(ChunkCursor::Unref(b));  // the last: free now
  // Leaving a chunk nothing else holds frees it at once.
  CHECK(cur.Retire() == &two);
  CHECK(cur.Retire() == nullptr);
}

}  // namespace
}  // namespace rdmq::producer
