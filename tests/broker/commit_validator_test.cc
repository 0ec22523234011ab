// CommitValidator without a broker: hand-built batches and partition facts go in; the verdicts
// (error codes), the producer state to record and the in-place filler rewrite come out.
#include "broker/commit_validator.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "rdmq/protocol/messages.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::broker::internal {
namespace {

using protocol::WireError;

constexpr uint64_t kMaxBatch = 1 << 20;

// A range of batches laid out back to back, as a producer writes them.
struct Range {
  std::vector<std::byte> bytes;

  // Appends a batch of `count` records of `value_size` bytes from producer `pid`.
  Range& Add(int64_t pid, int16_t epoch, int32_t base_sequence, int count = 1, size_t value_size = 10) {
    storage::BatchOptions o;
    o.producer_id = ProducerId(pid);
    o.producer_epoch = epoch;
    o.base_sequence = base_sequence;
    const std::string value(value_size, 'v');
    std::vector<storage::RecordInput> records(static_cast<size_t>(count));
    for (auto& r : records) r.value = value;
    const std::string b = storage::EncodeBatch(o, records);
    const auto* p = reinterpret_cast<const std::byte*>(b.data());
    bytes.insert(bytes.end(), p, p + b.size());
    return *this;
  }
  std::span<std::byte> span() { return bytes; }
};

storage::BatchHeader HeaderAt(const Range& r, size_t pos) {
  storage::BatchHeader h;
  REQUIRE(storage::DecodeBatchHeader({r.bytes.data() + pos, r.bytes.size() - pos}, &h).ok());
  return h;
}

ActiveSegment Active(int64_t base, uint64_t committed, uint64_t capacity = 1 << 16) {
  ActiveSegment a;
  a.base = Offset(base);
  a.committed = Position(committed);
  a.capacity = capacity;
  return a;
}

const Committer kExclusive{ProducerId(9), 2, false};
const Committer kShared{ProducerId(9), 2, true};
const Committer kPlain{kNoProducerId, 0, false};

TEST_CASE("a data-plane commit: exclusive, on the active segment, within the credit", "[broker][commit]") {
  ProducerStateTable producers;
  CommitValidator v("t-0", producers, kMaxBatch);
  const ActiveSegment a = Active(100, 4000, 5000);
  CHECK(v.CheckImmediate(kExclusive, Offset(100), a, 1000).ok());
  CHECK(v.CheckImmediate(kShared, Offset(100), a, 10).is(WireError::kInvalidRequest));
  CHECK(v.CheckImmediate(kExclusive, Offset(0), a, 10).is(WireError::kStaleLocation));
  CHECK(v.CheckImmediate(kExclusive, Offset(100), a, 0).is(WireError::kOutOfCredit));
  const Status past = v.CheckImmediate(kExclusive, Offset(100), a, 1001);
  CHECK(past.is(WireError::kOutOfCredit));
  CHECK(past.ToString().find("t-0") != std::string::npos);
}

TEST_CASE("a Commit RPC: writable segment, bytes, the committed end when exclusive", "[broker][commit]") {
  ProducerStateTable producers;
  CommitValidator v("t-0", producers, kMaxBatch);
  const ActiveSegment a = Active(100, 4000, 5000);
  auto check = [&](const Committer& c, bool writable, uint64_t pos, uint64_t len) {
    return v.CheckRequest(c, writable, Offset(100), Position(pos), len, 5000, a);
  };
  CHECK(check(kExclusive, false, 4000, 10).status().is(WireError::kStaleLocation));
  CHECK(check(kExclusive, true, 4000, 0).status().is(WireError::kInvalidRequest));
  CHECK(check(kExclusive, true, 3000, 10).status().is(WireError::kInvalidRequest));
  REQUIRE(check(kExclusive, true, 4000, 10).ok());
  CHECK(*check(kExclusive, true, 4000, 10));
  // Shared ranges land anywhere in the segment.
  REQUIRE(check(kShared, true, 100, 10).ok());
  CHECK(*check(kShared, true, 100, 10));
  // A range crossing the end is not checked here: the log refuses it (or ends the segment).
  REQUIRE(check(kShared, true, 4990, 20).ok());
  CHECK_FALSE(*check(kShared, true, 4990, 20));
  REQUIRE(check(kExclusive, true, 6000, 1).ok());
  CHECK_FALSE(*check(kExclusive, true, 6000, 1));
}

TEST_CASE("batches without a producer id pass, a batch over max.message.bytes does not", "[broker][commit]") {
  ProducerStateTable producers;
  Range r;
  r.Add(-1, -1, -1, 3).Add(-1, -1, -1, 2);
  const BatchCheck ok = CommitValidator("t-0", producers, kMaxBatch).CheckBatches(kPlain, r.span());
  CHECK(ok.status.ok());
  CHECK(ok.first_sequence == -1);
  Range big;
  big.Add(-1, -1, -1, 1, 2000);
  const BatchCheck tb = CommitValidator("t-0", producers, 1000).CheckBatches(kPlain, big.span());
  CHECK(tb.status.is(WireError::kRecordTooLarge));
}

TEST_CASE("every batch must carry the lease's producer and epoch", "[broker][commit]") {
  ProducerStateTable producers;
  CommitValidator v("t-0", producers, kMaxBatch);
  Range other;
  other.Add(8, 2, 0);
  CHECK(v.CheckBatches(kExclusive, other.span()).status.is(WireError::kInvalidProducerEpoch));
  Range old_epoch;
  old_epoch.Add(9, 1, 0);
  CHECK(v.CheckBatches(kExclusive, old_epoch.span()).status.is(WireError::kInvalidProducerEpoch));
  Range idempotent;
  idempotent.Add(9, 2, 0);
  CHECK(v.CheckBatches(kPlain, idempotent.span()).status.is(WireError::kInvalidProducerEpoch));
}

TEST_CASE("sequences continue the producer's state, the result is what to record", "[broker][commit]") {
  ProducerStateTable producers;
  producers.Set(ProducerId(9), ProducerState{2, 4});
  CommitValidator v("t-0", producers, kMaxBatch);
  Range r;
  r.Add(9, 2, 5, 3).Add(9, 2, 8, 2);
  const BatchCheck c = v.CheckBatches(kExclusive, r.span());
  REQUIRE(c.status.ok());
  CHECK(c.first_sequence == 5);
  CHECK(c.next.epoch == 2);
  CHECK(c.next.last_sequence == 9);
  CHECK(c.duplicates == 0);
  // Nothing is recorded by the check itself.
  CHECK(producers.LastSequence(ProducerId(9), 2) == 4);

  Range gap;
  gap.Add(9, 2, 7);
  CHECK(v.CheckBatches(kExclusive, gap.span()).status.is(WireError::kOutOfOrderSequence));
  // A new epoch starts at sequence 0.
  producers.Set(ProducerId(9), ProducerState{1, 50});
  Range fresh;
  fresh.Add(9, 2, 0);
  CHECK(v.CheckBatches(kExclusive, fresh.span()).status.ok());
}

TEST_CASE("a duplicate: refused when exclusive, replaced by a filler when shared", "[broker][commit]") {
  ProducerStateTable producers;
  producers.Set(ProducerId(9), ProducerState{2, 9});
  CommitValidator v("t-0", producers, kMaxBatch);

  Range ex;
  ex.Add(9, 2, 5, 3);
  const BatchCheck e = v.CheckBatches(kExclusive, ex.span());
  CHECK(e.status.is(WireError::kDuplicateSequence));
  CHECK(e.duplicates == 1);

  Range sh;
  sh.Add(9, 2, 5, 3).Add(9, 2, 10, 2);
  const size_t second = HeaderAt(sh, 0).total_size();
  const BatchCheck s = v.CheckBatches(kShared, sh.span());
  REQUIRE(s.status.ok());
  CHECK(s.duplicates == 1);
  CHECK(s.first_sequence == 10);
  CHECK(s.next.last_sequence == 11);
  const storage::BatchHeader filler = HeaderAt(sh, 0);
  CHECK(storage::IsFillerBatch(filler));
  CHECK(filler.total_size() == second);  // same length: the rest of the range is untouched
  CHECK(HeaderAt(sh, second).base_sequence == 10);
}

TEST_CASE("malformed bytes end the walk: the log reports them", "[broker][commit]") {
  ProducerStateTable producers;
  CommitValidator v("t-0", producers, kMaxBatch);
  Range r;
  r.Add(9, 2, 0);
  r.bytes.resize(r.bytes.size() + 100, std::byte{0xee});
  const BatchCheck c = v.CheckBatches(kExclusive, r.span());
  CHECK(c.status.ok());
  CHECK(c.next.last_sequence == 0);
}

}  // namespace
}  // namespace rdmq::broker::internal
