// The partition slot's seqlock: readers on the same host must never fail or see a mixed state
// while the single writer updates it, even when the writer is descheduled mid-update.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "rdmq/storage/format.h"
#include "support/test_util.h"

namespace rdmq::storage::format {
namespace {

// A slot whose fields all derive from its generation, so a reader can tell a mixed state.
PartitionSlot SlotFor(uint64_t gen) {
  PartitionSlot s;
  s.generation = gen;
  s.active_segment = Offset(static_cast<int64_t>(gen * 7));
  s.committed_position = Position(gen * 100);
  s.high_watermark = Offset(static_cast<int64_t>(gen * 3));
  s.log_start_offset = Offset(static_cast<int64_t>(gen));
  s.active_capacity = gen * 11;
  return s;
}

bool Consistent(const PartitionSlot& s) {
  const uint64_t g = s.generation;
  return s.active_segment.value() == static_cast<int64_t>(g * 7) && s.committed_position.value() == g * 100 &&
         s.high_watermark.value() == static_cast<int64_t>(g * 3) && s.active_capacity == g * 11;
}

TEST_CASE("a slot caught mid-update reports busy, not corruption", "[slot]") {
  alignas(64) std::byte slot[kSlotSize];
  StorePartitionSlot(slot, SlotFor(5));
  auto ok = ReadPartitionSlot(slot);
  REQUIRE_OK(ok);
  CHECK(ok->generation == 5);

  auto* word0 = reinterpret_cast<uint64_t*>(slot);
  *word0 |= kSlotBusyBit;  // a writer that stopped in the middle of an update
  PartitionSlot out;
  CHECK(DecodePartitionSlot(slot, &out).is(StorageErrc::kSlotBusy));
  auto busy = ReadPartitionSlot(slot, std::chrono::milliseconds(20));
  CHECK(busy.status().is(StorageErrc::kSlotBusy));
  CHECK(busy.status().is(Errc::kUnavailable));
}

TEST_CASE("readers wait out a writer descheduled in the middle of an update", "[slot]") {
  alignas(64) std::byte slot[kSlotSize];
  StorePartitionSlot(slot, SlotFor(1));
  auto* words = reinterpret_cast<uint64_t*>(slot);
  std::atomic<bool> started{false};
  std::thread writer([&] {
    // StorePartitionSlot's steps, with a 20 ms stall between the body and the generation, as
    // when the storage node's thread is preempted there (the failure the old protocol had).
    alignas(8) std::byte enc[kSlotSize];
    EncodePartitionSlot(SlotFor(2), enc);
    std::atomic_ref<uint64_t>(words[0]).store(1 | kSlotBusyBit, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    auto put = [&](size_t w) {
      uint64_t v;
      std::memcpy(&v, enc + 8 * w, 8);
      std::atomic_ref<uint64_t>(words[w]).store(v, std::memory_order_relaxed);
    };
    for (size_t w = 1; w < 4; ++w) put(w);
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (size_t w = 4; w < kSlotSize / 8; ++w) put(w);
    std::atomic_ref<uint64_t>(words[0]).store(2, std::memory_order_release);
  });
  while (!started) std::this_thread::yield();
  auto s = ReadPartitionSlot(slot);
  writer.join();
  REQUIRE_OK(s);
  CHECK(s->generation == 2);
  CHECK(Consistent(*s));
}

TEST_CASE("concurrent readers always see whole updates", "[slot]") {
  alignas(64) std::byte slot[kSlotSize];
  StorePartitionSlot(slot, SlotFor(1));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      uint64_t last = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        auto s = ReadPartitionSlot(slot);
        if (!s.ok() || !Consistent(*s) || s->generation < last) ++bad;
        if (s.ok()) last = s->generation;
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  const uint64_t updates = static_cast<uint64_t>(test::Trials(200000, 20000));
  // Readers running before the writer starts (on a loaded 2-core machine a thread may
  // otherwise first run after all the updates).
  while (reads.load() < 2) std::this_thread::yield();
  for (uint64_t g = 2; g < updates; ++g) StorePartitionSlot(slot, SlotFor(g));
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(bad.load() == 0);
  CHECK(reads.load() > 0);
  auto final_slot = ReadPartitionSlot(slot);
  REQUIRE_OK(final_slot);
  CHECK(final_slot->generation == updates - 1);
}

}  // namespace
}  // namespace rdmq::storage::format
