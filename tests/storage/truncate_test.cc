// PartitionLog::TruncateTo: the log cut back to a batch boundary, inside the active segment, at a
// segment boundary and across segments into a sealed one (mapped read-only after a reopen), then
// appended to (exclusive, remote exclusive and shared producers) and read back; the refusals; a
// replicated log's exposed end; retention; reopening; a truncation left at its commit point and
// finished by the next open; an impossible truncation record refused by Open.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/log.h"
#include "truncate_util.h"

using namespace rdmq;
using namespace rdmq::storage;
using rdmq::storage::test::AppendBatches;
using rdmq::storage::test::Expected;
using rdmq::storage::test::GenValue;
using rdmq::storage::test::Values;

namespace {

LogOptions Opts(uint64_t segment_bytes = 16 << 10) {
  LogOptions o;
  o.segment_bytes = segment_bytes;
  o.persist = PersistMode::kMsync;
  o.index_interval_bytes = 512;
  o.topic = TopicId(5);
  o.partition = PartitionId(1);
  return o;
}

std::unique_ptr<PartitionLog> OpenOk(Env* env, const std::string& dir, const LogOptions& o) {
  auto log = PartitionLog::Open(env, dir, o);
  REQUIRE_OK(log.status());
  return std::move(*log);
}

format::PartitionSlot SlotOf(const PartitionLog& log) {
  auto s = format::ReadPartitionSlot(log.Slot().memory);
  REQUIRE_OK(s.status());
  return *s;
}

// Appends single batches until the log has `n` segments.
void GrowTo(PartitionLog& log, Expected& e, size_t n, int gen = 0) {
  while (log.Segments().size() < n) REQUIRE_OK(AppendBatches(log, e, 1, 4, 100, gen));
}

// Where the batch starting at `o` lies.
Position PositionOf(const PartitionLog& log, Offset o) {
  auto r = log.Read(o, 1);
  REQUIRE_OK(r.status());
  return r->position;
}

// The newest valid checkpoint of a segment.
format::Checkpoint NewestCheckpoint(const SegmentInfo& s) {
  format::Checkpoint a, b;
  const bool va = format::DecodeCheckpoint(s.mapping + format::kCheckpointA, &a);
  const bool vb = format::DecodeCheckpoint(s.mapping + format::kCheckpointB, &b);
  REQUIRE((va || vb));
  if (va && vb) return a.sequence > b.sequence ? a : b;
  return va ? a : b;
}

bool AllZero(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

// A shared producer's batch of `n` records (baseOffset -1), values GenValue(gen, id).
std::string SharedBatch(int gen, int64_t id, int n) {
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) values.push_back(GenValue(gen, id + i, 100));
  std::vector<RecordInput> recs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    recs[static_cast<size_t>(i)].value = std::string_view(values[static_cast<size_t>(i)]);
  return EncodeBatch(BatchOptions{}, recs);
}

TEST_CASE("the truncation record's bytes are storage-format.md's example", "[truncate]") {
  const uint8_t expected[format::kRecordSize] = {
      0x4b, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x29, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5c, 0x48, 0x8a, 0x42};
  std::byte rec[format::kRecordSize];
  format::EncodeTruncationRecord({Position(4171), Offset(42), TimestampMs(1700000000041)}, rec);
  CHECK(std::memcmp(rec, expected, sizeof rec) == 0);
  format::TruncationRecord t;
  REQUIRE(format::DecodeTruncationRecord(rec, &t));
  CHECK(t.end == Position(4171));
  CHECK(t.next_offset == Offset(42));
  CHECK(t.max_timestamp == TimestampMs(1700000000041));
  // Invalid: all zero, a flipped bit, the truncating flag clear.
  std::byte zero[format::kRecordSize] = {};
  CHECK_FALSE(format::DecodeTruncationRecord(zero, &t));
  rec[3] ^= std::byte{1};
  CHECK_FALSE(format::DecodeTruncationRecord(rec, &t));
  std::memcpy(rec, expected, sizeof rec);
  rec[format::kSealFlags] = std::byte{0};  // the truncating flag (the seal record's layout)
  CHECK_FALSE(format::DecodeTruncationRecord(rec, &t));
}

TEST_CASE("truncate inside the active segment: the log ends there and continues from there", "[truncate]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Opts(64 << 10));
  Expected e;
  REQUIRE_OK(AppendBatches(*log, e, 10));  // offsets 0..39, batches of 4
  const Offset cut = e.batches[6];
  const Position pos = PositionOf(*log, cut);
  const uint64_t gen = SlotOf(*log).generation;
  REQUIRE_OK(log->Checkpoint());  // a checkpoint past the cut: the truncation must supersede it

  REQUIRE_OK(log->TruncateTo(cut));
  e.TruncateTo(cut);
  CHECK(log->LogEndOffset() == cut);
  CHECK(log->HighWatermark() == cut);
  CHECK(Values(*log) == e.values);
  const SegmentInfo act = log->ActiveSegment();
  CHECK(act.committed == pos);
  CHECK(act.next_offset == cut);
  CHECK_FALSE(act.sealed);
  // The slot is republished at the cut.
  const format::PartitionSlot slot = SlotOf(*log);
  CHECK(slot.generation > gen);
  CHECK(slot.high_watermark == cut);
  CHECK(slot.committed_position == pos);
  // On media: the tail is zero, the reservation word is the cut, the newest checkpoint names it,
  // and no truncation record is left.
  CHECK(AllZero(act.data() + pos.value(), act.capacity - pos.value()));
  CHECK(coding::LoadLE<uint64_t>(act.mapping + format::kReservationWord) == pos.value());
  const format::Checkpoint c = NewestCheckpoint(act);
  CHECK(c.committed == pos);
  CHECK(c.next_offset == cut);
  CHECK(AllZero(act.mapping + format::kTruncationRecord, format::kRecordSize));
  // Reads and lookups by time stop at the cut.
  CHECK(log->Read(cut + 1, 100).status().is(StorageErrc::kOffsetOutOfRange));
  CHECK(log->OffsetForTimestamp(TimestampMs(1000 + 30)).value() == kNoOffset);
  CHECK(log->OffsetForTimestamp(TimestampMs(1000 + 10)).value() == Offset(10));

  // Appends continue at the cut, with the new records.
  REQUIRE_OK(AppendBatches(*log, e, 5, 4, 100, 1));
  CHECK(log->ActiveSegment().base_offset == Offset(0));
  CHECK(Values(*log) == e.values);
  CHECK(e.values[static_cast<size_t>(cut.value())] == GenValue(1, cut.value(), 100));
  CHECK(log->OffsetForTimestamp(TimestampMs(1000 + 30)).value() == Offset(30));

  // A reopened log holds exactly the same.
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", Opts(64 << 10));
  CHECK_FALSE(log->recovery().truncation_finished);
  CHECK(log->recovery().truncated_bytes == 0);
  CHECK(Values(*log) == e.values);
}

TEST_CASE("truncate across segments into a sealed one: it becomes the active segment again", "[truncate]") {
  const bool real_files = GENERATE(false, true);
  const bool reopen_first = GENERATE(false, true);
  const bool at_boundary = GENERATE(false, true);
  INFO("real files " << real_files << ", reopened first " << reopen_first << ", at a segment boundary "
                     << at_boundary);
  MemEnv mem;
  ::rdmq::test::TempDir tmp("rdmq-truncate");
  Env* env = real_files ? DefaultEnv() : &mem;
  const std::string dir = real_files ? tmp.str() : "/p";
  auto log = OpenOk(env, dir, Opts());
  Expected e;
  GrowTo(*log, e, 5);
  REQUIRE_OK(AppendBatches(*log, e, 3));
  if (reopen_first) {
    // Sealed segments come back mapped read-only.
    REQUIRE_OK(log->Close());
    log = OpenOk(env, dir, Opts());
  }
  const std::vector<SegmentInfo> segs = log->Segments();
  REQUIRE(segs.size() == 5);
  // The cut: the first offset of the third segment, or a batch in the middle of the second.
  Offset cut = segs[2].base_offset;
  if (!at_boundary) {
    const Offset mid = segs[1].base_offset + (segs[2].base_offset - segs[1].base_offset) / 2;
    cut = *std::lower_bound(e.batches.begin(), e.batches.end(), mid);
    REQUIRE(cut > segs[1].base_offset);
    REQUIRE(cut < segs[2].base_offset);
  }
  const Offset holder = at_boundary ? segs[2].base_offset : segs[1].base_offset;
  const Position pos = PositionOf(*log, cut);

  REQUIRE_OK(log->TruncateTo(cut));
  e.TruncateTo(cut);
  std::vector<SegmentInfo> now = log->Segments();
  REQUIRE(now.size() == (at_boundary ? 3u : 2u));
  const SegmentInfo& act = now.back();
  CHECK(act.base_offset == holder);
  CHECK(log->ActiveSegment().base_offset == holder);
  CHECK_FALSE(act.sealed);
  CHECK(act.committed == pos);
  CHECK(act.next_offset == cut);
  CHECK(log->LogEndOffset() == cut);
  for (const SegmentInfo& s : segs) CHECK(env->FileExists(s.path) == (s.base_offset <= holder));
  format::SealRecord seal;
  CHECK_FALSE(format::DecodeSealRecord(act.mapping + format::kSealRecord, &seal));
  CHECK(AllZero(act.mapping + format::kTruncationRecord, format::kRecordSize));
  CHECK(Values(*log) == e.values);
  const format::PartitionSlot slot = SlotOf(*log);
  CHECK(slot.active_segment == holder);
  CHECK(slot.high_watermark == cut);
  CHECK((slot.flags & format::kSlotSealed) == 0);

  // Appending goes on in the segment that holds the cut, then rolls again; offsets continue.
  GrowTo(*log, e, 6, 1);
  REQUIRE_OK(AppendBatches(*log, e, 2, 4, 100, 1));
  CHECK(Values(*log) == e.values);
  REQUIRE_OK(log->Close());
  log = OpenOk(env, dir, Opts());
  CHECK_FALSE(log->recovery().truncation_finished);
  CHECK(log->Segments().size() == 6);
  CHECK(Values(*log) == e.values);
  REQUIRE_OK(AppendBatches(*log, e, 2, 4, 100, 2));
  CHECK(Values(*log) == e.values);
}

TEST_CASE("truncate to the log start: an empty log that continues at the same offset", "[truncate]") {
  MemEnv env;
  LogOptions o = Opts();
  o.initial_offset = Offset(100);
  auto log = OpenOk(&env, "/p", o);
  Expected e;
  e.start = Offset(100);
  GrowTo(*log, e, 3);
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", o);
  REQUIRE_OK(log->TruncateTo(Offset(100)));
  e.TruncateTo(Offset(100));
  CHECK(log->LogEndOffset() == Offset(100));
  CHECK(log->Segments().size() == 1);
  CHECK(log->ActiveSegment().committed == Position(0));
  CHECK(Values(*log).empty());
  REQUIRE_OK(AppendBatches(*log, e, 3, 4, 100, 1));
  CHECK(Values(*log) == e.values);
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", o);
  CHECK(log->LogStartOffset() == Offset(100));
  CHECK(Values(*log) == e.values);
}

TEST_CASE("truncation refuses what it must not do, and then changes nothing", "[truncate]") {
  MemEnv env;
  LogOptions o = Opts();
  auto log = OpenOk(&env, "/p", o);
  Expected e;
  GrowTo(*log, e, 4);
  REQUIRE_OK(AppendBatches(*log, e, 2));
  const Offset end = log->LogEndOffset();
  const uint64_t gen = SlotOf(*log).generation;
  auto unchanged = [&] {
    CHECK(log->LogEndOffset() == e.end());
    CHECK(SlotOf(*log).generation == gen);
    CHECK(Values(*log) == e.values);
  };

  // Inside a batch.
  const Offset inside = e.batches[3] + 1;
  Status s = log->TruncateTo(inside);
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find("offset " + std::to_string(inside.value()) + " is inside a batch") !=
        std::string::npos);
  // Past the end; the end itself is a no-op.
  s = log->TruncateTo(end + 4);
  CHECK(s.is(StorageErrc::kOffsetOutOfRange));
  CHECK(s.ToString().find("past the log end " + std::to_string(end.value())) != std::string::npos);
  REQUIRE_OK(log->TruncateTo(end));
  unchanged();

  // Shared-mode reservations outstanding: refused until they are gone.
  const std::string b = SharedBatch(9, 0, 2);
  auto dead = log->Reserve(b.size());
  REQUIRE_OK(dead.status());
  s = log->TruncateTo(e.batches[2]);
  CHECK(s.is(StorageErrc::kReservationConflict));
  CHECK(s.is(Errc::kFailedPrecondition));
  // ... also a committed range pending behind the uncommitted reservation.
  auto live = log->Reserve(b.size());
  REQUIRE_OK(live.status());
  std::memcpy(log->ActiveSegment().data() + live->position.value(), b.data(), b.size());
  auto c = log->Commit({CommitMode::kShared, live->segment, live->position, b.size(), kNoOffset});
  REQUIRE_OK(c.status());
  REQUIRE_FALSE(c->complete);
  CHECK(log->TruncateTo(e.batches[2]).is(StorageErrc::kReservationConflict));
  unchanged();
  // A roll drops the pending range and leaves the reservations behind in the sealed segment.
  REQUIRE_OK(log->Roll());
  CHECK(log->Segments().size() == 5);

  // Below the log start (retention removed the first two segments).
  LogOptions kept = o;
  kept.retention_bytes = 3 * o.segment_bytes;
  REQUIRE_OK(log->Reconfigure(kept));
  auto r = log->ApplyRetention(TimestampMs(0));
  REQUIRE_OK(r.status());
  REQUIRE(r->segments_deleted == 2);
  e.StartAt(log->LogStartOffset());
  s = log->TruncateTo(Offset(0));
  CHECK(s.is(StorageErrc::kOffsetOutOfRange));
  CHECK(s.ToString().find("below the log start " + std::to_string(e.start.value())) != std::string::npos);
  CHECK(Values(*log) == e.values);

  // Now allowed: into the segment whose reservations the roll left behind.
  const Offset cut = e.batches[e.batches.size() - 3];
  REQUIRE_OK(log->TruncateTo(cut));
  e.TruncateTo(cut);
  CHECK(Values(*log) == e.values);
  const SegmentInfo act = log->ActiveSegment();
  CHECK(coding::LoadLE<uint64_t>(act.mapping + format::kReservationWord) == act.committed.value());
  REQUIRE_OK(AppendBatches(*log, e, 2, 4, 100, 1));
  CHECK(Values(*log) == e.values);

  // A closed log.
  REQUIRE_OK(log->Close());
  CHECK(log->TruncateTo(Offset(0)).is(Errc::kFailedPrecondition));
}

TEST_CASE("after a truncation remote exclusive and shared producers write where it ended", "[truncate]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Opts());
  Expected e;
  GrowTo(*log, e, 3);
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", Opts());  // the cut lands in a read-only mapped segment
  const Offset cut = e.batches[3];
  REQUIRE_OK(log->TruncateTo(cut));
  e.TruncateTo(cut);

  // A shared producer reserves right at the cut and gets its offsets.
  const std::string b = SharedBatch(1, cut.value(), 3);
  auto res = log->Reserve(b.size());
  REQUIRE_OK(res.status());
  SegmentInfo act = log->ActiveSegment();
  CHECK(res->segment == act.base_offset);
  CHECK(res->position == act.committed);
  std::memcpy(act.data() + res->position.value(), b.data(), b.size());
  auto c = log->Commit({CommitMode::kShared, res->segment, res->position, b.size(), kNoOffset});
  REQUIRE_OK(c.status());
  CHECK(c->complete);
  CHECK(c->base_offset == cut);
  for (int i = 0; i < 3; ++i) e.values.push_back(GenValue(1, cut.value() + i, 100));
  e.batches.push_back(cut);

  // An exclusive producer writes the next batch itself and commits it.
  act = log->ActiveSegment();
  std::vector<std::string> values;
  std::vector<RecordInput> recs(2);
  for (int i = 0; i < 2; ++i) values.push_back(GenValue(2, act.next_offset.value() + i, 100));
  for (int i = 0; i < 2; ++i)
    recs[static_cast<size_t>(i)].value = std::string_view(values[static_cast<size_t>(i)]);
  BatchOptions bo;
  bo.base_offset = act.next_offset;
  const std::string x = EncodeBatch(bo, recs);
  std::memcpy(act.data() + act.committed.value(), x.data(), x.size());
  auto xc =
      log->Commit({CommitMode::kExclusive, act.base_offset, act.committed, x.size(), act.next_offset + 2});
  REQUIRE_OK(xc.status());
  CHECK(xc->base_offset == act.next_offset);
  for (auto& v : values) e.values.push_back(std::move(v));
  CHECK(Values(*log) == e.values);
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", Opts());
  CHECK(Values(*log) == e.values);
}

TEST_CASE("replicated log: truncation never goes below the exposed end", "[truncate][replicated]") {
  MemEnv env;
  LogOptions o = Opts();
  o.replicated = true;
  auto log = OpenOk(&env, "/p", o);
  Expected e;
  GrowTo(*log, e, 3);
  REQUIRE_OK(AppendBatches(*log, e, 2));
  const std::vector<SegmentInfo> segs = log->Segments();
  const Offset exposed = segs[1].base_offset;  // readers have the whole first segment
  REQUIRE_OK(log->Expose(exposed));
  const Offset below = *std::prev(std::lower_bound(e.batches.begin(), e.batches.end(), exposed));
  Status s = log->TruncateTo(below);
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find("below the exposed end " + std::to_string(exposed.value())) != std::string::npos);
  CHECK(log->LogEndOffset() == e.end());

  // Above it: readers see nothing change.
  const uint64_t gen = SlotOf(*log).generation;
  const Offset above = *std::upper_bound(e.batches.begin(), e.batches.end(), exposed);
  REQUIRE_OK(log->TruncateTo(above));
  e.TruncateTo(above);
  CHECK(log->LogEndOffset() == above);
  CHECK(log->HighWatermark() == exposed);
  CHECK(SlotOf(*log).high_watermark == exposed);
  CHECK(SlotOf(*log).generation == gen);
  // Exactly to it: the segment readers were told to move on to becomes the active one, empty.
  REQUIRE_OK(log->TruncateTo(exposed));
  e.TruncateTo(exposed);
  CHECK(log->Segments().size() == 2);
  CHECK(log->ActiveSegment().base_offset == exposed);
  CHECK(log->ActiveSegment().committed == Position(0));
  CHECK(log->HighWatermark() == exposed);
  CHECK(SlotOf(*log).high_watermark == exposed);

  REQUIRE_OK(AppendBatches(*log, e, 3, 4, 100, 1));
  REQUIRE_OK(log->Expose(log->LogEndOffset()));
  CHECK(Values(*log) == e.values);
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", o);
  CHECK(log->HighWatermark() == e.end());
  CHECK(Values(*log) == e.values);
}

TEST_CASE("retention and reads after a truncation", "[truncate]") {
  MemEnv env;
  LogOptions o = Opts();
  auto log = OpenOk(&env, "/p", o);
  Expected e;
  GrowTo(*log, e, 6);
  const std::vector<SegmentInfo> segs = log->Segments();
  const Offset cut = *std::upper_bound(e.batches.begin(), e.batches.end(), segs[3].base_offset);
  REQUIRE_OK(log->TruncateTo(cut));
  e.TruncateTo(cut);
  GrowTo(*log, e, 7, 1);
  CHECK(log->OffsetForTimestamp(TimestampMs(1000 + cut.value() + 1)).value() == cut + 1);  // a new record
  LogOptions kept = o;
  kept.retention_bytes = 3 * o.segment_bytes;
  REQUIRE_OK(log->Reconfigure(kept));
  auto r = log->ApplyRetention(TimestampMs(0));
  REQUIRE_OK(r.status());
  CHECK(r->segments_deleted == 4);
  e.StartAt(log->LogStartOffset());
  CHECK(Values(*log) == e.values);
  // Reads from every batch, and lookups by time.
  for (const Offset b : e.batches) {
    auto rd = log->Read(b, 1);
    REQUIRE_OK(rd.status());
    CHECK(rd->next_offset == b + 4);
  }
  CHECK(log->OffsetForTimestamp(TimestampMs(1000 + e.start.value())).value() == e.start);
  CHECK(log->OffsetForTimestamp(TimestampMs(1000 + e.end().value() - 1)).value() == e.end() - 1);
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", kept);
  CHECK(Values(*log) == e.values);
}

TEST_CASE("a truncation stopped at its commit point is finished by the next open", "[truncate]") {
  const bool power_loss = GENERATE(false, true);
  INFO("power loss " << power_loss);
  FaultInjectionEnv env;
  auto log = OpenOk(&env, "/p", Opts());
  Expected e;
  GrowTo(*log, e, 4);
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", Opts());
  const std::vector<SegmentInfo> segs = log->Segments();
  const Offset cut = *std::upper_bound(e.batches.begin(), e.batches.end(), segs[1].base_offset);
  // The power fails right after the truncation record was persisted.
  env.SetPersistBudget(1);
  Status s = log->TruncateTo(cut);
  CHECK(s.is(StorageErrc::kPowerLoss));
  e.TruncateTo(cut);
  // The log stops taking writes, and shows the truncated log meanwhile.
  CHECK(log->LogEndOffset() == cut);
  CHECK(log->Append(std::vector<RecordInput>(1)).status().is(StorageErrc::kLogFailed));
  CHECK(Values(*log) == e.values);
  log.reset();
  std::mt19937_64 rng(::rdmq::test::TestSeed());
  if (power_loss) {
    REQUIRE_OK(env.SimulatePowerLoss(rng, FaultInjectionEnv::LossMode::kDropUnpersisted).status());
  } else {
    env.SetPersistBudget(-1);  // a process crash: the page cache survives
  }
  log = OpenOk(&env, "/p", Opts());
  CHECK(log->recovery().truncation_finished);
  CHECK(log->LogEndOffset() == cut);
  CHECK(log->Segments().size() == 2);
  CHECK_FALSE(env.FileExists(segs[2].path));
  CHECK(Values(*log) == e.values);
  CHECK(AllZero(log->ActiveSegment().mapping + format::kTruncationRecord, format::kRecordSize));
  REQUIRE_OK(AppendBatches(*log, e, 2, 4, 100, 1));
  REQUIRE_OK(log->Close());
  REQUIRE_OK(env.SimulatePowerLoss(rng, FaultInjectionEnv::LossMode::kDropUnpersisted).status());
  log = OpenOk(&env, "/p", Opts());
  CHECK_FALSE(log->recovery().truncation_finished);
  CHECK(Values(*log) == e.values);
}

TEST_CASE("Open refuses an impossible truncation record and changes nothing", "[truncate]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Opts());
  Expected e;
  GrowTo(*log, e, 3);
  const std::vector<SegmentInfo> segs = log->Segments();
  REQUIRE_OK(log->Close());
  log.reset();
  auto file = env.ReadFile(segs[0].path);
  REQUIRE_OK(file.status());
  format::SealRecord seal;
  REQUIRE(format::DecodeSealRecord(reinterpret_cast<const std::byte*>(file->data()) + format::kSealRecord,
                                   &seal));
  // A cut past what the sealed segment holds: no truncation writes that.
  format::TruncationRecord t{seal.end + 100, seal.next_offset + 1, TimestampMs(0)};
  std::string bad = *file;
  format::EncodeTruncationRecord(t, reinterpret_cast<std::byte*>(bad.data()) + format::kTruncationRecord);
  REQUIRE_OK(env.WriteFile(segs[0].path, bad));
  auto refused = PartitionLog::Open(&env, "/p", Opts());
  CHECK(refused.status().is(StorageErrc::kCorruptHeader));
  CHECK(refused.status().ToString().find("truncation record") != std::string::npos);
  for (const SegmentInfo& s : segs) CHECK(env.FileExists(s.path));
  CHECK(*env.ReadFile(segs[0].path) == bad);
}

}  // namespace
