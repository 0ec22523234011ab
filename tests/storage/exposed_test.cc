// A replicated log's exposed end (LogOptions::replicated, PartitionLog::Expose): readers (the
// partition slot, Read, HighWatermark, OffsetForTimestamp) see only what the leader exposed, the
// committed end stays the log end offset; Expose takes batch boundaries only, never goes back and
// never past the committed end; across segment rolls the slot names the exposed segment; retention
// keeps what is not exposed; a reopened log shows what it showed before.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "rdmq/storage/format.h"
#include "rdmq/storage/log.h"
#include "storage_test_util.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

LogOptions Replicated(uint64_t segment_bytes = 64 << 10) {
  LogOptions o;
  o.segment_bytes = segment_bytes;
  o.persist = PersistMode::kMsync;
  o.index_interval_bytes = 512;
  o.replicated = true;
  return o;
}

// Appends `n` batches of `per` records (values "v<offset>", timestamps 1000 + offset); returns the
// offset after them.
Offset Batches(PartitionLog& log, int n, int per = 5, size_t value_bytes = 100) {
  Offset next = log.LogEndOffset();
  for (int b = 0; b < n; ++b) {
    std::vector<std::string> values;
    std::vector<RecordInput> recs(static_cast<size_t>(per));
    for (int i = 0; i < per; ++i) {
      std::string v = "v" + std::to_string(next.value() + i);
      v.resize(value_bytes, '.');
      values.push_back(std::move(v));
    }
    for (int i = 0; i < per; ++i) {
      recs[static_cast<size_t>(i)].value = values[static_cast<size_t>(i)];
      recs[static_cast<size_t>(i)].timestamp = TimestampMs(1000 + next.value() + i);
    }
    auto r = log.Append(recs);
    REQUIRE_OK(r);
    next = r->next_offset;
  }
  return next;
}

format::PartitionSlot SlotOf(const PartitionLog& log) {
  auto s = format::ReadPartitionSlot(log.Slot().memory);
  REQUIRE_OK(s);
  return *s;
}

// Every record a reader can get, from the log start.
size_t Readable(const PartitionLog& log) {
  size_t n = 0;
  Offset at = log.LogStartOffset();
  while (true) {
    auto r = log.Read(at, 1 << 20);
    REQUIRE_OK(r);
    if (r->bytes.empty()) return n;
    n += static_cast<size_t>(r->next_offset.value() - at.value());
    at = r->next_offset;
  }
}

TEST_CASE("replicated log: readers see only what was exposed, batch boundaries only, never back",
          "[log][replicated]") {
  rdmq::test::TempDir dir;
  auto log = PartitionLog::Open(DefaultEnv(), dir.str(), Replicated());
  REQUIRE_OK(log);
  PartitionLog& l = **log;
  const Offset end = Batches(l, 4);  // offsets 0..19, batches at 0, 5, 10, 15
  CHECK(end == Offset(20));
  CHECK(l.LogEndOffset() == Offset(20));
  CHECK(l.HighWatermark() == Offset(0));
  CHECK(Readable(l) == 0);
  CHECK(l.Read(Offset(1), 100).status().is(StorageErrc::kOffsetOutOfRange));
  CHECK(l.OffsetForTimestamp(TimestampMs(1000)).value() == kNoOffset);
  // The leader forwarding to its followers reads up to the log end.
  auto whole = l.Read(Offset(6), 1, ReadScope::kCommitted);
  REQUIRE_OK(whole);
  CHECK(whole->next_offset == Offset(10));  // the batch holding 6, whole
  CHECK(whole->high_watermark == Offset(20));
  auto rest = l.Read(Offset(10), 1 << 20, ReadScope::kCommitted);
  REQUIRE_OK(rest);
  CHECK(rest->next_offset == Offset(20));
  auto at_end = l.Read(Offset(20), 1 << 20, ReadScope::kCommitted);
  REQUIRE_OK(at_end);
  CHECK(at_end->bytes.empty());
  CHECK(l.Read(Offset(21), 1, ReadScope::kCommitted).status().is(StorageErrc::kOffsetOutOfRange));
  format::PartitionSlot s = SlotOf(l);
  CHECK(s.high_watermark == Offset(0));
  CHECK(s.committed_position == Position(0));

  CHECK(l.Expose(Offset(7)).is(Errc::kInvalidArgument));           // inside a batch
  CHECK(l.Expose(Offset(21)).is(StorageErrc::kOffsetOutOfRange));  // past the committed end
  const uint64_t gen = SlotOf(l).generation;
  REQUIRE_OK(l.Expose(Offset(10)));
  CHECK(l.HighWatermark() == Offset(10));
  CHECK(Readable(l) == 10);
  s = SlotOf(l);
  CHECK(s.generation > gen);
  CHECK(s.high_watermark == Offset(10));
  CHECK(s.active_segment == Offset(0));
  CHECK(s.committed_position > Position(0));
  CHECK(s.committed_position < l.ActiveSegment().committed);
  CHECK(l.OffsetForTimestamp(TimestampMs(1012)).value() == kNoOffset);  // offset 12: not exposed
  CHECK(l.OffsetForTimestamp(TimestampMs(1009)).value() == Offset(9));
  CHECK(l.Expose(Offset(5)).is(Errc::kInvalidArgument));  // the high watermark only grows
  // A commit changes nothing readers see: no new generation for them.
  const uint64_t before = SlotOf(l).generation;
  Batches(l, 1);
  CHECK(SlotOf(l).generation == before);
  REQUIRE_OK(l.Expose(Offset(25)));
  CHECK(Readable(l) == 25);
  CHECK(SlotOf(l).committed_position == l.ActiveSegment().committed);

  // A log that is not replicated has nothing to expose.
  rdmq::test::TempDir plain_dir;
  LogOptions plain = Replicated();
  plain.replicated = false;
  auto p = PartitionLog::Open(DefaultEnv(), plain_dir.str(), plain);
  REQUIRE_OK(p);
  Batches(**p, 2);
  CHECK((*p)->HighWatermark() == (*p)->LogEndOffset());
  CHECK((*p)->Expose(Offset(5)).is(Errc::kFailedPrecondition));
}

TEST_CASE("replicated log: across rolls the slot names the exposed segment and retention keeps the unexposed",
          "[log][replicated]") {
  rdmq::test::TempDir dir;
  LogOptions o = Replicated(16 << 10);
  o.retention_bytes = 1;  // everything sealed is old enough to go
  auto log = PartitionLog::Open(DefaultEnv(), dir.str(), o);
  REQUIRE_OK(log);
  PartitionLog& l = **log;
  // Several segments of data (each ~12 KiB of data area).
  while (l.Segments().size() < 4) Batches(l, 1, 5, 1000);
  const auto segs = l.Segments();
  const Offset second = segs[1].base_offset;
  REQUIRE_OK(l.Expose(second));  // the end of the first segment
  format::PartitionSlot s = SlotOf(l);
  // Readers read the first segment to its end and stop at the start of the second.
  CHECK(s.active_segment == second);
  CHECK(s.committed_position == Position(0));
  CHECK(s.high_watermark == second);
  CHECK(Readable(l) == static_cast<size_t>(second.value()));
  // Retention: the first segment is exposed whole, the others not at all.
  auto r = l.ApplyRetention(TimestampMs(int64_t{1} << 40));
  REQUIRE_OK(r);
  CHECK(r->segments_deleted == 1);
  CHECK(l.LogStartOffset() == second);
  REQUIRE_OK(l.Expose(segs[2].base_offset + 5));
  s = SlotOf(l);
  CHECK(s.active_segment == segs[2].base_offset);
  CHECK((s.flags & format::kSlotSealed) == 0);  // the exposed position is inside it
  r = l.ApplyRetention(TimestampMs(int64_t{1} << 40));
  REQUIRE_OK(r);
  CHECK(r->segments_deleted == 1);  // the second; the third holds unexposed records
  CHECK(l.LogStartOffset() == segs[2].base_offset);
  CHECK(Readable(l) == 5);
}

TEST_CASE("replicated log: a reopened log shows what it showed before", "[log][replicated]") {
  rdmq::test::TempDir dir;
  {
    auto log = PartitionLog::Open(DefaultEnv(), dir.str(), Replicated());
    REQUIRE_OK(log);
    Batches(**log, 6);
    REQUIRE_OK((*log)->Expose(Offset(15)));
    REQUIRE_OK((*log)->Close());
  }
  auto log = PartitionLog::Open(DefaultEnv(), dir.str(), Replicated());
  REQUIRE_OK(log);
  CHECK((*log)->LogEndOffset() == Offset(30));
  CHECK((*log)->HighWatermark() == Offset(15));
  CHECK(Readable(**log) == 15);
  CHECK(SlotOf(**log).high_watermark == Offset(15));
  // Opened as not replicated, everything committed is visible again.
  REQUIRE_OK((*log)->Close());
  LogOptions plain = Replicated();
  plain.replicated = false;
  auto p = PartitionLog::Open(DefaultEnv(), dir.str(), plain);
  REQUIRE_OK(p);
  CHECK((*p)->HighWatermark() == Offset(30));
}

}  // namespace
