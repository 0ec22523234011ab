// Leader epochs in the log (PartitionLog::SetLeaderEpoch, LeaderEpochs): a leader's log stamps
// every batch it takes (local appends, exclusive and shared commits, fillers) with its epoch; a
// follower's log keeps the stamps its leader's batches arrive with; the epoch cache follows
// commits, rolls, reopening (rebuilt from the batch headers), truncation and retention; an epoch
// below one the log holds is refused.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/storage/log.h"
#include "rdmq/storage/record_batch.h"
#include "truncate_util.h"

using namespace rdmq;
using namespace rdmq::storage;
using rdmq::storage::test::AppendBatches;
using rdmq::storage::test::Expected;
using rdmq::storage::test::GenValue;

namespace {

LogOptions Opts() {
  LogOptions o;
  o.segment_bytes = 16 << 10;
  o.persist = PersistMode::kMsync;
  o.index_interval_bytes = 512;
  return o;
}

std::unique_ptr<PartitionLog> OpenOk(Env* env, const std::string& dir, const LogOptions& o) {
  auto log = PartitionLog::Open(env, dir, o);
  REQUIRE_OK(log.status());
  return std::move(*log);
}

// The partitionLeaderEpoch of every batch from the log start, in order.
std::vector<int32_t> StampsOf(const PartitionLog& log) {
  std::vector<int32_t> out;
  Offset at = log.LogStartOffset();
  while (at < log.HighWatermark()) {
    auto r = log.Read(at, 1 << 20);
    REQUIRE_OK(r.status());
    for (size_t p = 0; p < r->bytes.size();) {
      BatchHeader h;
      REQUIRE_OK(DecodeBatchHeader(r->bytes.subspan(p), &h));
      out.push_back(h.leader_epoch);
      p += h.total_size();
    }
    at = r->next_offset;
  }
  return out;
}

// A batch of `n` records with base offset `base` (-1: a shared producer's) and leader epoch
// `epoch`, as a producer or a leader wrote it.
std::string Batch(int64_t base, int n, int32_t epoch) {
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) values.push_back(GenValue(0, base + i, 50));
  std::vector<RecordInput> recs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    recs[static_cast<size_t>(i)].value = std::string_view(values[static_cast<size_t>(i)]);
  BatchOptions o;
  o.base_offset = Offset(base);
  o.leader_epoch = epoch;
  return EncodeBatch(o, recs);
}

// Writes `bytes` at the active segment's committed end and commits them exclusively.
Result<CommitOutcome> CommitExclusive(PartitionLog& log, const std::string& bytes) {
  const SegmentInfo a = log.ActiveSegment();
  std::memcpy(a.data() + a.committed.value(), bytes.data(), bytes.size());
  return log.Commit({CommitMode::kExclusive, a.base_offset, a.committed, bytes.size(), kNoOffset});
}

// Appends `n` local batches of 4 records at the log end.
Status Append(PartitionLog& log, int n) {
  Expected e;
  e.start = log.LogEndOffset();
  return AppendBatches(log, e, n);
}

using Epochs = std::vector<EpochStart>;

}  // namespace

TEST_CASE("a leader's log stamps its epoch on every batch it takes", "[storage][epochs]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Opts());
  // Nothing stamped: batches keep -1 and belong to no epoch.
  REQUIRE_OK(Append(*log, 2));
  CHECK(log->LeaderEpochs().empty());

  REQUIRE_OK(log->SetLeaderEpoch(3));
  const Offset three = log->LogEndOffset();
  REQUIRE_OK(Append(*log, 2));  // local appends
  // An exclusive producer's batch, written with -1: stamped on commit.
  REQUIRE_OK(CommitExclusive(*log, Batch(log->LogEndOffset().value(), 3, -1)).status());
  // A shared producer's: stamped when its offsets are assigned.
  const std::string s = Batch(-1, 2, -1);
  auto res = log->Reserve(s.size());
  REQUIRE_OK(res.status());
  std::memcpy(log->ActiveSegment().data() + res->position.value(), s.data(), s.size());
  auto c = log->Commit({CommitMode::kShared, res->segment, res->position, s.size(), kNoOffset});
  REQUIRE_OK(c.status());
  REQUIRE(c->complete);
  CHECK(StampsOf(*log) == std::vector<int32_t>{-1, -1, 3, 3, 3, 3});
  CHECK(log->LeaderEpochs() == Epochs{{3, three}});
  // Stamping does not touch what the CRC covers: every batch still reads back valid.
  CHECK(rdmq::storage::test::ReadAll(*log).size() == 8 + 8 + 3 + 2);

  // A new epoch starts a new entry; the same epoch again changes nothing.
  REQUIRE_OK(log->SetLeaderEpoch(3));
  const Offset five = log->LogEndOffset();
  REQUIRE_OK(log->SetLeaderEpoch(5));
  REQUIRE_OK(Append(*log, 1));
  CHECK(log->LeaderEpochs() == Epochs{{3, three}, {5, five}});
  // Epochs never go back: refused, and the log keeps stamping 5.
  const Status back = log->SetLeaderEpoch(4);
  CHECK(back.is(Errc::kInvalidArgument));
  CHECK(back.ToString().find("below epoch 5") != std::string::npos);
  REQUIRE_OK(Append(*log, 1));
  CHECK(StampsOf(*log).back() == 5);
  // -1 stops stamping (a leader that became a follower).
  REQUIRE_OK(log->SetLeaderEpoch(-1));
  REQUIRE_OK(Append(*log, 1));
  CHECK(StampsOf(*log).back() == -1);
  CHECK(log->LeaderEpochs() == Epochs{{3, three}, {5, five}});
}

TEST_CASE("a follower's log keeps its leader's stamps", "[storage][epochs]") {
  MemEnv env;
  auto log = OpenOk(&env, "/p", Opts());
  // The leader's batches arrive stamped: epochs 1, 1, 4 (a follower never sets an epoch).
  REQUIRE_OK(CommitExclusive(*log, Batch(0, 2, 1)).status());
  REQUIRE_OK(CommitExclusive(*log, Batch(2, 2, 1)).status());
  REQUIRE_OK(CommitExclusive(*log, Batch(4, 3, 4)).status());
  CHECK(StampsOf(*log) == std::vector<int32_t>{1, 1, 4});
  CHECK(log->LeaderEpochs() == Epochs{{1, Offset(0)}, {4, Offset(4)}});
  // Becoming the leader at epoch 2 would go back: refused.
  CHECK(log->SetLeaderEpoch(2).is(Errc::kInvalidArgument));
}

TEST_CASE("the epoch cache survives rolls and reopening, follows truncation and retention",
          "[storage][epochs]") {
  MemEnv env;
  LogOptions o = Opts();
  std::vector<Offset> starts;
  {
    auto log = OpenOk(&env, "/p", o);
    // Four epochs, each over several segments (16 KiB segments, ~500-byte batches).
    for (int32_t epoch : {1, 2, 6, 9}) {
      REQUIRE_OK(log->SetLeaderEpoch(epoch));
      starts.push_back(log->LogEndOffset());
      REQUIRE_OK(Append(*log, 40));
    }
    REQUIRE(log->Segments().size() >= 6);
    CHECK(log->LeaderEpochs() == Epochs{{1, starts[0]}, {2, starts[1]}, {6, starts[2]}, {9, starts[3]}});
    REQUIRE_OK(log->Close());
  }
  auto log = OpenOk(&env, "/p", o);
  CHECK(log->LeaderEpochs() == Epochs{{1, starts[0]}, {2, starts[1]}, {6, starts[2]}, {9, starts[3]}});
  // The stamp is not remembered across an open: the broker sets it when it leads.
  REQUIRE_OK(Append(*log, 1));
  CHECK(StampsOf(*log).back() == -1);

  // Truncation into epoch 6 drops epoch 9 and keeps 6 from where it started.
  const Offset cut = starts[2] + 8;  // batches of 4 records: a batch boundary
  REQUIRE_OK(log->TruncateTo(cut));
  CHECK(log->LeaderEpochs() == Epochs{{1, starts[0]}, {2, starts[1]}, {6, starts[2]}});
  // Truncation to an epoch's first offset drops that epoch too.
  REQUIRE_OK(log->TruncateTo(starts[2]));
  CHECK(log->LeaderEpochs() == Epochs{{1, starts[0]}, {2, starts[1]}});
  // A new leader epoch continues the cache from the cut.
  REQUIRE_OK(log->SetLeaderEpoch(10));
  REQUIRE_OK(Append(*log, 2));
  CHECK(log->LeaderEpochs() == Epochs{{1, starts[0]}, {2, starts[1]}, {10, starts[2]}});
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", o);
  CHECK(log->LeaderEpochs() == Epochs{{1, starts[0]}, {2, starts[1]}, {10, starts[2]}});

  // Retention: epoch 1 gone entirely, epoch 2 now starts at the log start.
  LogOptions keep = o;
  keep.retention_bytes = 16 << 10;
  REQUIRE_OK(log->Close());
  log = OpenOk(&env, "/p", keep);
  REQUIRE_OK(log->ApplyRetention(TimestampMs(0)).status());
  const Offset start = log->LogStartOffset();
  REQUIRE(start > starts[1]);
  CHECK(log->LeaderEpochs() == Epochs{{2, start}, {10, starts[2]}});
}
