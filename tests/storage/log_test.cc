// PartitionLog: append, remote exclusive and shared commits, reservations and their expiry,
// rolls, reads by offset and time, retention, the partition slot, reopen.
#include "rdmq/storage/log.h"

#include <unistd.h>

#include <cstring>
#include <random>
#include <thread>

#include "storage_test_util.h"

using namespace rdmq;
using namespace rdmq::storage;
using rdmq::storage::test::ReadAll;
using rdmq::storage::test::ValueFor;

namespace {

LogOptions Small(uint64_t segment_bytes = 64 << 10) {
  LogOptions o;
  o.segment_bytes = segment_bytes;
  o.persist = PersistMode::kMsync;
  o.index_interval_bytes = 512;
  o.topic = TopicId(7);
  o.partition = PartitionId(3);
  return o;
}

constexpr uint64_t kSalt = 99;

// (Concatenating a literal with std::to_string trips GCC 12's -Wrestrict false positive at -O3.)
std::string Key(const char* prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}
std::string Key(const char* prefix, uint64_t n) { return Key(prefix, static_cast<int64_t>(n)); }

// Appends n records whose value/key/timestamp derive from their offset.
AppendResult AppendN(PartitionLog& log, int n, size_t max_len = 300) {
  const Offset first = log.HighWatermark();
  std::vector<std::string> values, keys;
  for (int i = 0; i < n; ++i) {
    values.push_back(ValueFor(kSalt, static_cast<uint64_t>(first.value() + i), max_len));
    keys.push_back(Key("k", first.value() + i));
  }
  std::vector<RecordInput> recs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    recs[i].key = std::string_view(keys[i]);
    recs[i].value = std::string_view(values[i]);
    recs[i].timestamp = TimestampMs(1000 + 10 * (first.value() + i));
  }
  auto r = log.Append(recs);
  REQUIRE_OK(r.status());
  CHECK(r->base_offset == first);
  CHECK(r->next_offset == first + n);
  return *r;
}

void CheckRecords(const PartitionLog& log, Offset from = kNoOffset, size_t max_len = 300) {
  const auto all = ReadAll(log, from);
  const int64_t start = from == kNoOffset ? log.LogStartOffset().value() : from.value();
  REQUIRE(static_cast<int64_t>(all.size()) == log.HighWatermark().value() - start);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& r = all[i];
    REQUIRE(r.offset == start + static_cast<int64_t>(i));
    REQUIRE(r.value == ValueFor(kSalt, static_cast<uint64_t>(r.offset), max_len));
    REQUIRE(r.key == Key("k", r.offset));
    REQUIRE(r.timestamp == 1000 + 10 * r.offset);
  }
}

std::unique_ptr<PartitionLog> OpenOk(Env* env, const std::string& dir, const LogOptions& o) {
  auto log = PartitionLog::Open(env, dir, o);
  REQUIRE_OK(log.status());
  return std::move(*log);
}

// Encodes a batch of `n` records with ids from `id` for shared or exclusive producers.
std::string ProducerBatch(Offset base, uint64_t id, int n) {
  std::vector<std::string> values, keys;
  for (int i = 0; i < n; ++i) {
    values.push_back(ValueFor(kSalt + 1, id + i, 100));
    keys.push_back(Key("id", id + i));
  }
  std::vector<RecordInput> recs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    recs[i].key = std::string_view(keys[i]);
    recs[i].value = std::string_view(values[i]);
    recs[i].timestamp = TimestampMs(5000 + static_cast<int64_t>(id + i));
  }
  BatchOptions o;
  o.base_offset = base;
  return EncodeBatch(o, recs);
}

}  // namespace

TEST_CASE("a new log appends, reads back by any offset, and survives a clean reopen", "[log]") {
  ::rdmq::test::TempDir dir("rdmq-log");
  std::mt19937_64 rng(::rdmq::test::TestSeed());
  {
    auto log = OpenOk(DefaultEnv(), dir.str(), Small());
    CHECK(log->recovery().created);
    CHECK(log->HighWatermark() == Offset(0));
    CHECK(log->LogStartOffset() == Offset(0));
    while (log->HighWatermark().value() < 2000) AppendN(*log, 1 + static_cast<int>(rng() % 30));
    CHECK(log->Segments().size() > 3);  // rolled several times
    CheckRecords(*log);
    // Reads starting at random offsets return the batch containing the offset.
    for (int i = 0; i < 200; ++i) {
      const Offset at(static_cast<int64_t>(rng() % 2000));
      auto r = log->Read(at, 1 + rng() % 5000);
      REQUIRE_OK(r.status());
      BatchHeader h;
      REQUIRE_OK(ValidateBatch(r->bytes, Validation::kCrc, &h));
      CHECK(h.base_offset <= at);
      CHECK(h.next_offset() > at);
      CHECK(r->next_offset > at);
    }
    REQUIRE_OK(log->Close());
    CHECK(log->Read(Offset(0), 10).status().is(Errc::kFailedPrecondition));
    CHECK(log->Append(std::vector<RecordInput>(1)).status().is(Errc::kFailedPrecondition));
  }
  auto log = OpenOk(DefaultEnv(), dir.str(), Small());
  CHECK_FALSE(log->recovery().created);
  CHECK(log->recovery().truncated_bytes == 0);
  CHECK(log->HighWatermark().value() >= 2000);
  CheckRecords(*log);
  AppendN(*log, 5);
  CheckRecords(*log);
}

TEST_CASE("reads at the boundaries: high watermark, below log start, beyond", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small());
  auto r = log->Read(Offset(0), 100);
  REQUIRE_OK(r.status());
  CHECK(r->bytes.empty());
  AppendN(*log, 10);
  r = log->Read(Offset(10), 100);
  REQUIRE_OK(r.status());
  CHECK(r->bytes.empty());
  CHECK(r->next_offset == Offset(10));
  auto bad = log->Read(Offset(11), 100);
  CHECK(bad.status().is(StorageErrc::kOffsetOutOfRange));
  CHECK(bad.status().ToString().find("offset 11 is beyond the high watermark 10") != std::string::npos);
  CHECK(log->Read(Offset(-1), 100).status().is(Errc::kOutOfRange));
  // max_bytes smaller than a batch still returns one batch.
  r = log->Read(Offset(3), 1);
  REQUIRE_OK(r.status());
  CHECK(!r->bytes.empty());
}

TEST_CASE("a log can start at a configured offset", "[log]") {
  MemEnv env;
  LogOptions o = Small();
  o.initial_offset = Offset(4096);
  auto log = OpenOk(&env, "/p", o);
  CHECK(log->LogStartOffset() == Offset(4096));
  AppendN(*log, 3);
  CHECK(log->HighWatermark() == Offset(4099));
  auto r = log->Read(Offset(12), 10);
  CHECK(r.status().is(StorageErrc::kOffsetOutOfRange));
  CHECK(r.status().ToString().find("offset 12 is below the log start 4096") != std::string::npos);
  CheckRecords(*log);
}

TEST_CASE("OffsetForTimestamp finds the first record at or after a time", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small(16 << 10));
  std::mt19937_64 rng(::rdmq::test::TestSeed());
  while (log->HighWatermark().value() < 500) AppendN(*log, 1 + static_cast<int>(rng() % 10));
  for (int64_t off = 0; off < 500; off += 7) {
    auto exact = log->OffsetForTimestamp(TimestampMs(1000 + 10 * off));
    REQUIRE_OK(exact.status());
    CHECK(*exact == Offset(off));
    auto between = log->OffsetForTimestamp(TimestampMs(1000 + 10 * off + 5));
    REQUIRE_OK(between.status());
    CHECK(*between == Offset(off + 1));
  }
  CHECK(*log->OffsetForTimestamp(TimestampMs(0)) == Offset(0));
  CHECK(*log->OffsetForTimestamp(TimestampMs(1'000'000)) == kNoOffset);
}

TEST_CASE("exclusive producers commit remotely written batches after validation", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small());
  AppendN(*log, 3);
  auto seg = log->ActiveSegment();
  CHECK(seg.fd >= 0);
  CHECK(seg.data_offset == 4096);
  CHECK(seg.reservation_word_offset == 64);
  const uint64_t pos = seg.committed.value();

  // Two batches written back to back, committed as one range.
  const std::string b1 = ProducerBatch(Offset(3), 0, 4);
  const std::string b2 = ProducerBatch(Offset(7), 4, 2);
  std::memcpy(seg.data() + pos, b1.data(), b1.size());
  std::memcpy(seg.data() + pos + b1.size(), b2.data(), b2.size());
  CommitRequest req{CommitMode::kExclusive, seg.base_offset, Position(pos), b1.size() + b2.size(), Offset(9)};

  // Wrong expectations are refused and change nothing.
  CommitRequest wrong = req;
  wrong.expected_next_offset = Offset(10);
  auto c = log->Commit(wrong);
  CHECK(c.status().is(StorageErrc::kOffsetMismatch));
  CHECK(c.status().ToString().find("the producer says 10") != std::string::npos);
  wrong = req;
  wrong.position = Position(pos + 1);
  CHECK(log->Commit(wrong).status().is(StorageErrc::kRangeConflict));
  wrong = req;
  wrong.segment = Offset(1);
  CHECK(log->Commit(wrong).status().is(StorageErrc::kUnknownSegment));
  wrong = req;
  wrong.length = seg.capacity;
  CHECK(log->Commit(wrong).status().is(StorageErrc::kPositionOutOfRange));
  CHECK(log->HighWatermark() == Offset(3));

  auto ok = log->Commit(req);
  REQUIRE_OK(ok.status());
  CHECK(ok->complete);
  CHECK(ok->base_offset == Offset(3));
  CHECK(ok->high_watermark == Offset(9));
  CHECK(ok->committed == Position(pos + b1.size() + b2.size()));
  REQUIRE(ok->completed.size() == 1);

  // A batch whose offsets do not continue the log.
  seg = log->ActiveSegment();
  const std::string gap = ProducerBatch(Offset(10), 0, 1);
  std::memcpy(seg.data() + seg.committed.value(), gap.data(), gap.size());
  c = log->Commit({CommitMode::kExclusive, seg.base_offset, seg.committed, gap.size(), kNoOffset});
  CHECK(c.status().is(StorageErrc::kOffsetMismatch));
  CHECK(c.status().ToString().find("base offset 10, the log expects 9") != std::string::npos);
  // A corrupted batch is reported with its segment and position.
  std::string corrupt = ProducerBatch(Offset(9), 0, 1);
  corrupt[70] ^= 0x10;
  std::memcpy(seg.data() + seg.committed.value(), corrupt.data(), corrupt.size());
  c = log->Commit({CommitMode::kExclusive, seg.base_offset, seg.committed, corrupt.size(), kNoOffset});
  CHECK(c.status().is(StorageErrc::kCorruptBatch));
  CHECK(c.status().ToString().find("segment 00000000000000000000.seg position " +
                                   std::to_string(seg.committed.value())) != std::string::npos);
  CHECK(log->HighWatermark() == Offset(9));
  const auto all = ReadAll(*log);
  REQUIRE(all.size() == 9);
  for (int i = 3; i < 9; ++i) CHECK(all[i].value == ValueFor(kSalt + 1, static_cast<uint64_t>(i - 3), 100));
}

TEST_CASE("shared producers: offsets are assigned in position order as prefixes complete", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small());
  const std::string b[3] = {ProducerBatch(kNoOffset, 100, 3), ProducerBatch(kNoOffset, 200, 1),
                            ProducerBatch(kNoOffset, 300, 2)};
  Reservation r[3];
  for (int i = 0; i < 3; ++i) {
    auto res = log->Reserve(b[i].size());
    REQUIRE_OK(res.status());
    CHECK(res->fits);
    r[i] = *res;
  }
  CHECK(r[1].position.value() == b[0].size());
  auto seg = log->ActiveSegment();
  for (int i = 0; i < 3; ++i) std::memcpy(seg.data() + r[i].position.value(), b[i].data(), b[i].size());
  auto commit = [&](int i) {
    return log->Commit({CommitMode::kShared, r[i].segment, r[i].position, b[i].size(), kNoOffset});
  };
  // Exclusive commits and appends are refused while reservations are out.
  CHECK(log->Append(std::vector<RecordInput>(1)).status().is(StorageErrc::kReservationConflict));

  auto c2 = commit(2);
  REQUIRE_OK(c2.status());
  CHECK_FALSE(c2->complete);
  CHECK(c2->high_watermark == Offset(0));
  auto c1 = commit(1);
  REQUIRE_OK(c1.status());
  CHECK_FALSE(c1->complete);
  CHECK(commit(1).status().is(StorageErrc::kRangeConflict));  // double commit
  auto c0 = commit(0);
  REQUIRE_OK(c0.status());
  CHECK(c0->complete);
  CHECK(c0->base_offset == Offset(0));
  CHECK(c0->high_watermark == Offset(6));
  REQUIRE(c0->completed.size() == 3);
  CHECK(c0->completed[0].base_offset == Offset(0));
  CHECK(c0->completed[1].base_offset == Offset(3));
  CHECK(c0->completed[2].base_offset == Offset(4));
  CHECK(c0->completed[2].next_offset == Offset(6));

  // The base offsets were patched in place; CRCs still hold.
  const auto all = ReadAll(*log);
  REQUIRE(all.size() == 6);
  const uint64_t ids[6] = {100, 101, 102, 200, 300, 301};
  for (int i = 0; i < 6; ++i) CHECK(all[i].value == ValueFor(kSalt + 1, ids[i], 100));

  // Refused: baseOffset not -1, bytes not reserved, ranges that overlap.
  const std::string assigned = ProducerBatch(Offset(6), 0, 1);
  auto res = log->Reserve(assigned.size());
  std::memcpy(seg.data() + res->position.value(), assigned.data(), assigned.size());
  auto c = log->Commit({CommitMode::kShared, res->segment, res->position, assigned.size(), kNoOffset});
  CHECK(c.status().is(StorageErrc::kOffsetMismatch));
  c = log->Commit({CommitMode::kShared, res->segment, res->position, assigned.size() + 100, kNoOffset});
  CHECK(c.status().is(StorageErrc::kRangeConflict));
  CHECK(c.status().ToString().find("was not reserved") != std::string::npos);
}

TEST_CASE("expired reservations are filled with control batches so the watermark moves on", "[log]") {
  MemEnv env;
  LogOptions o = Small();
  o.reservation_lease_ns = 1000;
  auto log = OpenOk(&env, "/p", o);
  const std::string a = ProducerBatch(kNoOffset, 1, 2);
  const std::string b = ProducerBatch(kNoOffset, 2, 3);
  auto ra = log->Reserve(a.size());  // this producer dies
  auto rb = log->Reserve(b.size());
  auto seg = log->ActiveSegment();
  std::memcpy(seg.data() + rb->position.value(), b.data(), b.size());
  auto cb = log->Commit({CommitMode::kShared, rb->segment, rb->position, b.size(), kNoOffset});
  REQUIRE_OK(cb.status());
  CHECK_FALSE(cb->complete);

  auto e = log->ExpireReservations(10'000);  // first sight of the word: not expired yet
  REQUIRE_OK(e.status());
  CHECK(e->fillers == 0);
  e = log->ExpireReservations(10'500);
  CHECK(e->fillers == 0);
  e = log->ExpireReservations(11'000);
  REQUIRE_OK(e.status());
  CHECK(e->fillers == 1);
  CHECK(e->filled_bytes == a.size());
  REQUIRE(e->completed.size() == 2);
  CHECK(e->completed[0].filler);
  CHECK(e->completed[0].base_offset == Offset(0));
  CHECK(e->completed[1].base_offset == Offset(1));
  CHECK(log->HighWatermark() == Offset(4));
  // The late producer's commit is refused.
  CHECK(log->Commit({CommitMode::kShared, ra->segment, ra->position, a.size(), kNoOffset})
            .status()
            .is(StorageErrc::kRangeConflict));
  const auto all = ReadAll(*log);
  REQUIRE(all.size() == 4);
  CHECK(all[0].control);
  for (int i = 1; i < 4; ++i) {
    CHECK_FALSE(all[i].control);
    CHECK(all[i].value == ValueFor(kSalt + 1, 2 + static_cast<uint64_t>(i - 1), 100));
  }
  // Trailing expired reservations are filled too.
  auto rc = log->Reserve(200);
  REQUIRE_OK(rc.status());
  REQUIRE_OK(log->ExpireReservations(20'000).status());
  e = log->ExpireReservations(21'000);
  REQUIRE_OK(e.status());
  CHECK(e->fillers == 1);
  CHECK(log->HighWatermark() == Offset(5));
  CHECK(log->ActiveSegment().committed.value() == rc->position.value() + 200);
  // And the log accepts exclusive appends again.
  AppendN(*log, 2);
  CHECK(log->HighWatermark() == Offset(7));
}

TEST_CASE("a reservation crossing the segment end seals the segment at its start and rolls", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small(8192));  // 4096-byte data area
  const std::string b = ProducerBatch(kNoOffset, 0, 8);
  REQUIRE(b.size() > 500);  // 3 to 7 fit
  REQUIRE(b.size() < 1300);
  std::vector<Reservation> rs;
  while (true) {
    auto r = log->Reserve(b.size());
    REQUIRE_OK(r.status());
    rs.push_back(*r);
    if (!r->fits) break;
  }
  const Reservation crossing = rs.back();
  rs.pop_back();
  auto seg = log->ActiveSegment();
  // The crossing producer reports its reservation; the segment cannot roll yet (others pending).
  auto cx =
      log->Commit({CommitMode::kShared, crossing.segment, crossing.position, crossing.length, kNoOffset});
  CHECK(cx.status().is(StorageErrc::kSegmentFull));
  CHECK(log->Segments().size() == 1);
  for (size_t i = 0; i < rs.size(); ++i) {
    std::memcpy(seg.data() + rs[i].position.value(), b.data(), b.size());
    auto c = log->Commit({CommitMode::kShared, rs[i].segment, rs[i].position, b.size(), kNoOffset});
    REQUIRE_OK(c.status());
    CHECK(c->complete);
  }
  // The last commit completed the prefix up to the crossing reservation: sealed and rolled.
  const auto segs = log->Segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].sealed);
  CHECK(segs[0].committed == crossing.position);
  format::SealRecord seal;
  REQUIRE(format::DecodeSealRecord(segs[0].mapping + format::kSealRecord, &seal));
  CHECK(seal.end == crossing.position);
  CHECK(seal.next_offset == Offset(static_cast<int64_t>(8 * rs.size())));
  CHECK(segs[1].base_offset == seal.next_offset);
  // Commits aimed at the sealed segment are refused; the producer retries on the new one.
  CHECK(log->Commit({CommitMode::kShared, crossing.segment, crossing.position, 100, kNoOffset})
            .status()
            .is(StorageErrc::kSegmentSealed));
  auto r = log->Reserve(b.size());
  REQUIRE_OK(r.status());
  CHECK(r->segment == segs[1].base_offset);
  std::memcpy(segs[1].data() + r->position.value(), b.data(), b.size());
  REQUIRE_OK(log->Commit({CommitMode::kShared, r->segment, r->position, b.size(), kNoOffset}).status());
  CHECK(ReadAll(*log).size() == 8 * (rs.size() + 1));
}

TEST_CASE("reservations that fill the segment exactly: the next one marks its end, and it rolls", "[log]") {
  MemEnv env;
  const std::string b = ProducerBatch(kNoOffset, 0, 8);
  // A data area of exactly n batches (at least 4 KiB), so no reservation straddles the end.
  const uint64_t n = (4096 + b.size() - 1) / b.size();
  auto log = OpenOk(&env, "/p", Small(format::kSegmentHeaderSize + n * b.size()));
  auto seg = log->ActiveSegment();
  REQUIRE(seg.capacity == n * b.size());
  std::vector<Reservation> rs;
  for (uint64_t i = 0; i < n; ++i) {
    auto r = log->Reserve(b.size());
    REQUIRE_OK(r.status());
    REQUIRE(r->fits);
    rs.push_back(*r);
  }
  auto past = log->Reserve(b.size());
  REQUIRE_OK(past.status());
  REQUIRE_FALSE(past->fits);
  REQUIRE(past->position.value() == seg.capacity);
  // Reported before the others commit: full, and no roll yet.
  CHECK(log->Commit({CommitMode::kShared, past->segment, past->position, b.size(), kNoOffset})
            .status()
            .is(StorageErrc::kSegmentFull));
  CHECK(log->Segments().size() == 1);
  for (const Reservation& r : rs) {
    std::memcpy(seg.data() + r.position.value(), b.data(), b.size());
    REQUIRE_OK(log->Commit({CommitMode::kShared, r.segment, r.position, b.size(), kNoOffset}).status());
  }
  // The last commit reached the end: sealed there and rolled, so the retry lands somewhere.
  const auto segs = log->Segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].sealed);
  CHECK(segs[0].committed.value() == seg.capacity);
  auto r = log->Reserve(b.size());
  REQUIRE_OK(r.status());
  CHECK(r->fits);
  CHECK(r->segment == segs[1].base_offset);
}

TEST_CASE("when the producer that crossed the end dies, lease expiry seals the segment", "[log]") {
  MemEnv env;
  LogOptions o = Small(8192);
  o.reservation_lease_ns = 100;
  auto log = OpenOk(&env, "/p", o);
  const std::string b = ProducerBatch(kNoOffset, 0, 8);
  std::vector<Reservation> rs;
  while (true) {
    auto r = log->Reserve(b.size());
    rs.push_back(*r);
    if (!r->fits) break;
  }
  rs.pop_back();  // the crossing one never reports
  auto seg = log->ActiveSegment();
  // All but the second fitting reservation commit; the second one's producer died too.
  for (size_t i = 0; i < rs.size(); ++i) {
    if (i == 1) continue;
    std::memcpy(seg.data() + rs[i].position.value(), b.data(), b.size());
    REQUIRE_OK(
        log->Commit({CommitMode::kShared, rs[i].segment, rs[i].position, b.size(), kNoOffset}).status());
  }
  CHECK(log->HighWatermark() == Offset(8));
  REQUIRE_OK(log->ExpireReservations(1000).status());
  auto e = log->ExpireReservations(2000);
  REQUIRE_OK(e.status());
  CHECK(e->fillers == 1);
  CHECK(e->rolled);
  const auto segs = log->Segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].sealed);
  CHECK(segs[0].committed.value() == rs.back().position.value() + b.size());
  CHECK(log->HighWatermark() == Offset(static_cast<int64_t>(8 * (rs.size() - 1) + 1)));
  const auto all = ReadAll(*log);
  CHECK(all.size() == 8 * (rs.size() - 1) + 1);
  CHECK(all[8].control);
}

TEST_CASE("Roll seals the active segment, an empty segment is not rolled", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small());
  REQUIRE_OK(log->Roll());
  CHECK(log->Segments().size() == 1);
  AppendN(*log, 5);
  REQUIRE_OK(log->Roll());
  auto segs = log->Segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].sealed);
  CHECK(segs[1].base_offset == Offset(5));
  CHECK(env.FileExists("/p/00000000000000000005.seg"));
  AppendN(*log, 5);
  CheckRecords(*log);
}

TEST_CASE("retention deletes whole sealed segments by size and by age", "[log]") {
  MemEnv env;
  LogOptions o = Small(16 << 10);
  o.retention_bytes = 3 * (16 << 10);
  auto log = OpenOk(&env, "/p", o);
  while (log->Segments().size() < 6) AppendN(*log, 10);
  auto ret = log->ApplyRetention(TimestampMs(0));
  REQUIRE_OK(ret.status());
  CHECK(ret->segments_deleted == 3);
  CHECK(log->Segments().size() == 3);
  const Offset start = log->LogStartOffset();
  CHECK(start == log->Segments()[0].base_offset);
  CHECK(start > Offset(0));
  auto r = log->Read(Offset(0), 100);
  CHECK(r.status().is(StorageErrc::kOffsetOutOfRange));
  CHECK(r.status().ToString().find("offset 0 is below the log start " + std::to_string(start.value())) !=
        std::string::npos);
  CheckRecords(*log);
  // The slot tells remote consumers the new start.
  auto slot = format::ReadPartitionSlot(log->Slot().memory);
  REQUIRE_OK(slot.status());
  CHECK(slot->log_start_offset == start);

  // By age: records carry timestamps 1000 + 10 * offset.
  LogOptions aged = o;
  aged.retention_bytes = 0;
  aged.retention_ms = 100;
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", aged);
  const auto segs = log->Segments();
  // "now" such that only the first segment's newest record is older than 100 ms.
  const int64_t first_max = 1000 + 10 * (segs[1].base_offset.value() - 1);
  ret = log->ApplyRetention(TimestampMs(first_max + 101));
  REQUIRE_OK(ret.status());
  CHECK(ret->segments_deleted == 1);
  CHECK(log->LogStartOffset() == segs[1].base_offset);
  // The active segment is never deleted.
  ret = log->ApplyRetention(TimestampMs(1'000'000'000));
  CHECK(log->Segments().size() == 1);
  CHECK_FALSE(log->Segments()[0].sealed);
  CheckRecords(*log);
}

TEST_CASE("Reconfigure: new segments take the new size and mode, retention applies at once", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small(16 << 10));
  AppendN(*log, 10);
  const Offset first_active = log->ActiveSegment().base_offset;

  LogOptions o = Small(32 << 10);
  o.persist = PersistMode::kNone;
  o.retention_bytes = 40 << 10;
  REQUIRE_OK(log->Reconfigure(o));
  CHECK(log->options().segment_bytes == (32u << 10));
  CHECK(log->options().retention_bytes == (40u << 10));
  // The active segment keeps the size and mode it was created with.
  SegmentInfo a = log->ActiveSegment();
  CHECK(a.base_offset == first_active);
  CHECK(a.capacity == (16u << 10) - format::kSegmentHeaderSize);
  CHECK(a.persist == PersistMode::kMsync);
  // The next roll creates a segment of the new size, in the new mode.
  while (log->Segments().size() < 2) AppendN(*log, 10);
  a = log->ActiveSegment();
  CHECK(a.capacity == (32u << 10) - format::kSegmentHeaderSize);
  CHECK(a.persist == PersistMode::kNone);
  CHECK(log->Segments()[0].persist == PersistMode::kMsync);
  // Retention uses the new limit: 16 + 32 + 32 KiB > 40 KiB deletes whole segments from the start.
  while (log->Segments().size() < 3) AppendN(*log, 10);
  auto ret = log->ApplyRetention(TimestampMs(0));
  REQUIRE_OK(ret.status());
  CHECK(ret->segments_deleted == 2);
  CHECK(log->Segments().size() == 1);
  CheckRecords(*log, log->LogStartOffset());

  // Refused, changing nothing: another partition, a segment too small, no index interval.
  LogOptions bad = o;
  bad.partition = PartitionId(4);
  CHECK(log->Reconfigure(bad).is(StorageErrc::kInvalidOptions));
  bad = o;
  bad.segment_bytes = 4096;
  CHECK(log->Reconfigure(bad).is(StorageErrc::kInvalidOptions));
  bad = o;
  bad.index_interval_bytes = 0;
  CHECK(log->Reconfigure(bad).is(StorageErrc::kInvalidOptions));
  CHECK(log->options().segment_bytes == (32u << 10));
  REQUIRE_OK(log->Close());
  CHECK(log->Reconfigure(o).is(Errc::kFailedPrecondition));
}

TEST_CASE("the partition slot publishes position, watermark and a changing generation", "[log]") {
  ::rdmq::test::TempDir dir("rdmq-log");
  auto log = OpenOk(DefaultEnv(), dir.str(), Small());
  const SlotInfo slot = log->Slot();
  CHECK(slot.fd == -1);  // a log on files keeps no descriptor: one is opened when needed
  auto fd = OpenMappedFileFd(slot.fd, slot.file_id, slot.path, false);
  REQUIRE_OK(fd.status());
  ::close(*fd);
  CHECK(slot.size == 4096);
  auto s0 = format::ReadPartitionSlot(slot.memory);
  REQUIRE_OK(s0.status());
  AppendN(*log, 4);
  auto s1 = format::ReadPartitionSlot(slot.memory);
  REQUIRE_OK(s1.status());
  CHECK(s1->generation > s0->generation);
  CHECK(s1->high_watermark == Offset(4));
  CHECK(s1->committed_position == log->ActiveSegment().committed);
  CHECK(s1->active_segment == Offset(0));
  CHECK(s1->active_capacity == log->ActiveSegment().capacity);
  CHECK(s1->flags == 0);
  // A torn snapshot (any changed byte) is detected.
  std::byte copy[64];
  for (size_t i = 0; i < 64; ++i) {
    std::memcpy(copy, slot.memory, 64);
    copy[i] ^= std::byte{0x04};
    format::PartitionSlot s;
    CHECK_FALSE(format::DecodePartitionSlot(copy, &s).ok());
  }
  const uint64_t gen = s1->generation;
  REQUIRE_OK(log->Close());
  // Still mapped through the pin; flagged closed.
  auto s2 = format::ReadPartitionSlot(slot.memory);
  REQUIRE_OK(s2.status());
  CHECK((s2->flags & format::kSlotClosed) != 0);
  // The generation keeps growing across a reopen (futex waiters never see it go back).
  log = OpenOk(DefaultEnv(), dir.str(), Small());
  auto s3 = format::ReadPartitionSlot(log->Slot().memory);
  CHECK(s3->generation > gen);
  CHECK(s3->high_watermark == Offset(4));
}

TEST_CASE("concurrent readers of the slot never accept a torn snapshot", "[log]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Small(1 << 20));
  const SlotInfo slot = log->Slot();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, bad{0};
  std::thread reader([&] {
    int64_t last = 0;
    while (!stop.load()) {
      auto s = format::ReadPartitionSlot(slot.memory);
      if (!s.ok() || s->high_watermark.value() < last) ++bad;
      if (s.ok()) last = s->high_watermark.value();
      ++reads;
    }
  });
  for (int i = 0; i < ::rdmq::test::Trials(3000) || reads.load() < 1000; ++i) AppendN(*log, 1, 20);
  stop = true;
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(reads.load() > 0);
}

TEST_CASE("shared and exclusive commits from many threads keep the log consistent", "[log]") {
  MemEnv env;
  LogOptions o = Small(32 << 10);
  auto log = OpenOk(&env, "/p", o);
  constexpr int kThreads = 4;
  const int per_thread = ::rdmq::test::Trials(300, 20);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const uint64_t id = static_cast<uint64_t>(t) * 1'000'000 + static_cast<uint64_t>(i) * 10;
        const std::string b = ProducerBatch(kNoOffset, id, 1 + i % 5);
        while (true) {
          auto r = log->Reserve(b.size());
          if (!r.ok()) {
            ++failures;
            return;
          }
          if (r->fits) {
            auto segs = log->Segments();
            std::byte* data = nullptr;
            for (const auto& s : segs) {
              if (s.base_offset == r->segment) data = s.data();
            }
            if (data == nullptr) continue;  // rolled meanwhile: reserve again
            std::memcpy(data + r->position.value(), b.data(), b.size());
          }
          auto c = log->Commit({CommitMode::kShared, r->segment, r->position, b.size(), kNoOffset});
          if (c.ok()) break;
          if (!c.status().is(StorageErrc::kSegmentFull) && !c.status().is(StorageErrc::kSegmentSealed)) {
            ++failures;
            return;
          }
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  CHECK(log->Segments().size() > 1);
  // Every batch is present exactly once with its exact bytes.
  const auto all = ReadAll(*log);
  std::map<std::string, int> seen;
  for (const auto& r : all) {
    REQUIRE(r.key.has_value());
    REQUIRE(r.value == ValueFor(kSalt + 1, std::stoull(r.key->substr(2)), 100));
    ++seen[*r.key];
  }
  int expected = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < per_thread; ++i) {
      const uint64_t id = static_cast<uint64_t>(t) * 1'000'000 + static_cast<uint64_t>(i) * 10;
      for (int k = 0; k < 1 + i % 5; ++k) {
        CHECK(seen[Key("id", id + static_cast<uint64_t>(k))] == 1);
        ++expected;
      }
    }
  }
  CHECK(static_cast<int>(all.size()) == expected);
}
