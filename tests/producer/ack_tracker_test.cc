// AckTracker without a broker: batches, acks, Commit responses, lease events and time are fed
// in; the completions that come out (which batches, with which status and offsets, in which
// order) are checked.
#include "producer/ack_tracker.h"

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <vector>

namespace rdmq::producer {

class AckTrackerTestPeer {
 public:
  static size_t queued(const AckTracker& t) { return t.queued_.size(); }
  static bool have_ack(const AckTracker& t) { return t.have_ack_; }
};

namespace {

using protocol::WireError;
using namespace std::chrono_literals;

constexpr auto kDeliveryTimeout = std::chrono::milliseconds(1000);
constexpr uint64_t kMs = 1'000'000;

// A tracker and the batches fed to it. Batches are 100 bytes of 10 records unless told; in
// exclusive mode they are written back to back from position 0 of segment 0, with offsets
// from 0 and sequences from 0.
struct Harness {
  explicit Harness(PartitionMode mode) : mode(mode), t(mode, kDeliveryTimeout) {}

  TrackedBatch* Seal(size_t size = 100, int32_t count = 10) {
    auto& b = batches.emplace_back(std::make_unique<TrackedBatch>());
    b->size = size;
    b->count = count;
    b->base_sequence = next_sequence;
    next_sequence += count;
    t.Enqueue(b.get());
    return b.get();
  }
  // Posts the queue's front at the next position (shared: with a new Commit post id).
  TrackedBatch* Post() {
    TrackedBatch* b = t.next();
    Placement at;
    at.segment_base = segment;
    at.position = write_pos;
    if (mode == PartitionMode::kExclusive) {
      at.base_offset = next_offset;
      next_offset += b->count;
    } else {
      at.post_id = next_post_id++;
    }
    write_pos += b->size;
    t.Posted(at);
    return b;
  }
  TrackedBatch* SealAndPost(size_t size = 100, int32_t count = 10) {
    Seal(size, count);
    return Post();
  }
  std::array<TrackedBatch*, 3> SealAndPost3() { return {SealAndPost(), SealAndPost(), SealAndPost()}; }
  AckVerdict Ack(uint64_t acked_position, uint16_t error = 0, uint16_t flags = 0,
                 Offset segment_base = Offset(0)) {
    protocol::AckBlock a;
    a.generation = ++generation;
    a.acked_position = Position(acked_position);
    a.segment_base = segment_base;
    a.error = error;
    a.flags = flags;
    Status why;
    const AckVerdict v = t.OnAck(a, &why);
    last_why = why;
    if (v == AckVerdict::kConfirmed) t.CompleteAcked();
    return v;
  }
  CommitVerdict Commit(TrackedBatch* b, int64_t base_offset, uint32_t flags = 0) {
    protocol::CommitResponse r;
    r.base_offset = Offset(base_offset);
    r.flags = flags;
    return Commit(b, b->post_id, r);
  }
  CommitVerdict Commit(TrackedBatch* b, uint64_t post_id, const Result<protocol::CommitResponse>& r) {
    Status why;
    const CommitVerdict v = t.OnCommit(b, post_id, r, &why);
    last_why = why;
    if (v == CommitVerdict::kCommitted) t.CompleteAcked();
    return v;
  }
  // Starts a new lease: positions restart where the broker says.
  void NewLease(int32_t last_sequence, Position at, Offset offset) {
    write_pos = at;
    next_offset = offset;
    t.LeaseOpened(last_sequence);
  }
  std::vector<Completion> Take() {
    std::vector<Completion> out;
    t.TakeCompletions(out);
    return out;
  }

  PartitionMode mode;
  AckTracker t;
  std::vector<std::unique_ptr<TrackedBatch>> batches;
  int32_t next_sequence = 0;
  Offset segment{0};
  Position write_pos{0};
  Offset next_offset{0};
  uint64_t next_post_id = 1;
  uint64_t generation = 0;
  Status last_why;
};

// The batches of `done`, and that each completed OK.
std::vector<TrackedBatch*> Ok(const std::vector<Completion>& done) {
  std::vector<TrackedBatch*> out;
  for (const Completion& c : done) {
    CHECK(c.status.ok());
    out.push_back(c.batch);
  }
  return out;
}

TEST_CASE("exclusive: acks complete the batches they cover, in order, with their offsets",
          "[producer][acks]") {
  Harness h(PartitionMode::kExclusive);
  auto [a, b, c] = h.SealAndPost3();
  CHECK(h.t.in_flight() == 3);
  CHECK_FALSE(h.t.has_completions());

  // Half of b: only a.
  CHECK(h.Ack(150) == AckVerdict::kConfirmed);
  auto done = h.Take();
  REQUIRE(Ok(done) == std::vector<TrackedBatch*>{a});
  CHECK_FALSE(done[0].read_offset);
  CHECK(a->base_offset == Offset(0));

  // Exactly up to c's end: b and c, in order.
  CHECK(h.Ack(300) == AckVerdict::kConfirmed);
  done = h.Take();
  REQUIRE(Ok(done) == std::vector<TrackedBatch*>{b, c});
  CHECK(b->base_offset == Offset(10));
  CHECK(c->base_offset == Offset(20));
  CHECK(h.t.idle());
}

TEST_CASE("exclusive: a repeated, older or other segment's ack completes nothing again", "[producer][acks]") {
  Harness h(PartitionMode::kExclusive);
  TrackedBatch* a = h.SealAndPost();
  h.SealAndPost();
  h.Ack(100);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a});
  // The same ack again (a duplicate delivery), then an older one arriving late.
  h.Ack(100);
  h.Ack(50);
  CHECK_FALSE(h.t.has_completions());
  // An ack about another segment covers nothing of this one.
  h.Ack(1000, 0, 0, Offset(500));
  CHECK_FALSE(h.t.has_completions());
  CHECK(h.t.in_flight() == 1);
}

TEST_CASE("exclusive: a retriable error completes what the ack covers and resends the rest",
          "[producer][acks]") {
  Harness h(PartitionMode::kExclusive);
  auto [a, b, c] = h.SealAndPost3();
  TrackedBatch* d = h.Seal();  // not posted yet

  CHECK(h.Ack(100, static_cast<uint16_t>(WireError::kOutOfOrderSequence)) == AckVerdict::kLeaseLost);
  CHECK(h.last_why.is(WireError::kOutOfOrderSequence));
  CHECK_FALSE(AckTrackerTestPeer::have_ack(h.t));
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a});

  h.t.LeaseLost(5 * kMs);
  CHECK(h.t.in_flight() == 0);
  REQUIRE(AckTrackerTestPeer::queued(h.t) == 3);
  // b, c go back before d, in order; a new lease rewrites them from its position.
  h.NewLease(-1, Position(100), Offset(10));
  CHECK(h.Post() == b);
  CHECK(h.Post() == c);
  CHECK(h.Post() == d);
  CHECK(b->base_offset == Offset(10));
  CHECK(d->base_offset == Offset(30));
  h.Ack(400);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{b, c, d});
}

TEST_CASE("exclusive: a non-retriable error fails the first batch not covered, resends the others",
          "[producer][acks]") {
  Harness h(PartitionMode::kExclusive);
  auto [a, b, c] = h.SealAndPost3();
  CHECK(h.Ack(100, static_cast<uint16_t>(WireError::kCorruptMessage)) == AckVerdict::kLeaseLost);
  const auto done = h.Take();
  REQUIRE(done.size() == 2);
  CHECK(done[0].batch == a);
  CHECK(done[0].status.ok());
  CHECK(done[1].batch == b);
  CHECK(done[1].status.is(WireError::kCorruptMessage));
  h.t.LeaseLost(0);
  REQUIRE(AckTrackerTestPeer::queued(h.t) == 1);
  CHECK(h.t.next() == c);
}

TEST_CASE("a revoked lease completes what the ack covers", "[producer][acks]") {
  Harness h(PartitionMode::kExclusive);
  TrackedBatch* a = h.SealAndPost();
  TrackedBatch* b = h.SealAndPost();
  CHECK(h.Ack(100, 0, protocol::kAckLeaseRevoked) == AckVerdict::kLeaseLost);
  CHECK(h.last_why.is(WireError::kLeaseExpired));
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a});
  h.t.LeaseLost(0);
  CHECK(h.t.next() == b);
  CHECK_FALSE(b->complete);
}

TEST_CASE("after a lost lease, batches the broker already has complete instead of being resent",
          "[producer][acks][lease]") {
  Harness h(PartitionMode::kExclusive);
  // Sequences 0..9, 10..19, 20..29.
  auto [a, b, c] = h.SealAndPost3();
  TrackedBatch* d = h.Seal();  // 30..39, never posted
  h.Ack(100);                  // only a was acknowledged before the lease went
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a});
  h.t.LeaseLost(0);
  // The broker committed b (sequence 19) before the lease ended; c and d it never saw.
  h.NewLease(19, Position(200), Offset(20));
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{b});
  CHECK(h.Post() == c);
  CHECK(h.Post() == d);
  CHECK(c->base_offset == Offset(20));
  h.Ack(400);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{c, d});
}

TEST_CASE("without idempotence nothing is taken as already written", "[producer][acks][lease]") {
  Harness h(PartitionMode::kExclusive);
  TrackedBatch* a = h.Seal();
  a->base_sequence = -1;
  h.Post();
  h.t.LeaseLost(0);
  h.NewLease(1'000'000, Position(0), Offset(0));
  CHECK_FALSE(h.t.has_completions());
  CHECK(h.t.next() == a);
}

TEST_CASE("batches waiting without a lease time out after delivery.timeout.ms", "[producer][acks][lease]") {
  Harness h(PartitionMode::kExclusive);
  h.SealAndPost();
  CHECK_FALSE(h.t.DeliveryExpired(1'000'000 * kMs));  // a lease is open
  const uint64_t lost = 10 * kMs;
  h.t.LeaseLost(lost);
  CHECK_FALSE(h.t.DeliveryExpired(lost + 1000 * kMs));
  CHECK(h.t.DeliveryExpired(lost + 1000 * kMs + 1));
  // A failed reopen later does not restart the clock; a new lease stops it.
  h.t.LeaseUnavailable(lost + 500 * kMs);
  CHECK(h.t.DeliveryExpired(lost + 1000 * kMs + 1));
  h.NewLease(-1, Position(0), Offset(0));
  CHECK_FALSE(h.t.DeliveryExpired(lost + 5000 * kMs));
  // Opening failed from the start: the clock starts at the first failure.
  h.t.LeaseUnavailable(100 * kMs);
  h.t.LeaseUnavailable(900 * kMs);
  CHECK(h.t.DeliveryExpired(1101 * kMs));
  // A time read before the loss was recorded (another thread's clock) is not past it.
  CHECK_FALSE(h.t.DeliveryExpired(99 * kMs));
}

TEST_CASE("FailAll fails in-flight then queued batches in order, each once", "[producer][acks]") {
  Harness h(PartitionMode::kExclusive);
  TrackedBatch* a = h.SealAndPost();
  TrackedBatch* b = h.SealAndPost();
  TrackedBatch* c = h.Seal();
  h.Ack(100);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a});
  TrackedBatch open;  // the partition's open batch
  const Status why(Errc::kTimeout, "delivery.timeout.ms passed");
  h.t.FailAll(why);
  h.t.Fail(&open, why);
  h.t.FailAll(why);  // nothing left: nothing more
  h.t.Fail(&open, why);
  const auto done = h.Take();
  REQUIRE(done.size() == 3);
  CHECK(done[0].batch == b);
  CHECK(done[1].batch == c);
  CHECK(done[2].batch == &open);
  for (const Completion& x : done) CHECK(x.status.is(Errc::kTimeout));
  CHECK(h.t.idle());
}

TEST_CASE("a batch that cannot be sent fails alone", "[producer][acks]") {
  Harness h(PartitionMode::kExclusive);
  TrackedBatch* a = h.Seal();
  TrackedBatch* b = h.Seal();
  h.t.Refused(Status(WireError::kRecordTooLarge, "does not fit a segment"));
  const auto done = h.Take();
  REQUIRE(done.size() == 1);
  CHECK(done[0].batch == a);
  CHECK(done[0].status.is(WireError::kRecordTooLarge));
  CHECK(h.t.next() == b);
}

TEST_CASE("shared: batches complete in position order when Commit responses arrive out of order",
          "[producer][acks][shared]") {
  Harness h(PartitionMode::kShared);
  auto [a, b, c] = h.SealAndPost3();
  // c's and b's responses come first, with their offsets: they wait for a.
  CHECK(h.Commit(c, 20) == CommitVerdict::kCommitted);
  CHECK(h.Commit(b, 10) == CommitVerdict::kCommitted);
  CHECK_FALSE(h.t.has_completions());
  CHECK(h.Commit(a, 0) == CommitVerdict::kCommitted);
  const auto done = h.Take();
  REQUIRE(Ok(done) == std::vector<TrackedBatch*>{a, b, c});
  for (const Completion& x : done) CHECK_FALSE(x.read_offset);
  CHECK(a->base_offset == Offset(0));
  CHECK(b->base_offset == Offset(10));
  CHECK(c->base_offset == Offset(20));
}

TEST_CASE("shared: a committed batch without its offset completes once an ack covers it",
          "[producer][acks][shared]") {
  Harness h(PartitionMode::kShared);
  TrackedBatch* a = h.SealAndPost();
  TrackedBatch* b = h.SealAndPost();
  // The ack may come before the Commit responses: nothing completes without its response.
  h.Ack(200);
  CHECK_FALSE(h.t.has_completions());
  CHECK(h.Commit(a, -1) == CommitVerdict::kCommitted);
  auto done = h.Take();
  REQUIRE(Ok(done) == std::vector<TrackedBatch*>{a});
  CHECK(done[0].read_offset);  // the producer reads the offset from the log
  // c is committed first but waits for b; then the ack does not cover c yet.
  TrackedBatch* c = h.SealAndPost();
  CHECK(h.Commit(c, -1) == CommitVerdict::kCommitted);
  CHECK_FALSE(h.t.has_completions());
  CHECK(h.Commit(b, -1) == CommitVerdict::kCommitted);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{b});
  h.Ack(250);
  CHECK_FALSE(h.t.has_completions());
  h.Ack(300);
  done = h.Take();
  REQUIRE(Ok(done) == std::vector<TrackedBatch*>{c});
  CHECK(done[0].read_offset);
}

TEST_CASE("shared: a batch in a segment older than the ack's is committed", "[producer][acks][shared]") {
  Harness h(PartitionMode::kShared);
  TrackedBatch* a = h.SealAndPost();  // segment 0
  h.segment = Offset(1000);
  h.write_pos = Position(0);
  TrackedBatch* b = h.SealAndPost();  // segment 1000
  CHECK(h.t.OldestSegment(Offset(1000)) == Offset(0));
  CHECK(h.Commit(a, -1) == CommitVerdict::kCommitted);
  CHECK(h.Commit(b, -1) == CommitVerdict::kCommitted);
  CHECK_FALSE(h.t.has_completions());
  h.Ack(50, 0, 0, Offset(1000));  // about the new segment; b not covered yet
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a});
  CHECK(h.t.OldestSegment(Offset(1000)) == Offset(1000));
  h.Ack(100, 0, 0, Offset(1000));
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{b});
}

TEST_CASE("shared: stale or repeated Commit responses are ignored", "[producer][acks][shared]") {
  Harness h(PartitionMode::kShared);
  TrackedBatch* a = h.SealAndPost();
  const uint64_t first_post = a->post_id;
  h.t.LeaseLost(0);  // resent on a new lease with a new Commit
  h.NewLease(-1, Position(0), Offset(0));
  h.Post();
  CHECK(a->post_id != first_post);
  protocol::CommitResponse r;
  r.base_offset = Offset(7);
  CHECK(h.Commit(a, first_post, r) == CommitVerdict::kStale);
  CHECK_FALSE(a->committed);
  TrackedBatch stranger;
  CHECK(h.Commit(&stranger, 1, r) == CommitVerdict::kStale);
  CHECK(h.Commit(a, 0) == CommitVerdict::kCommitted);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a});
  CHECK(a->base_offset == Offset(0));
  // Its response again, after it completed.
  CHECK(h.Commit(a, a->post_id, r) == CommitVerdict::kStale);
  CHECK_FALSE(h.t.has_completions());
}

TEST_CASE("shared: Commit errors lose the lease or fail the batch", "[producer][acks][shared]") {
  Harness h(PartitionMode::kShared);
  auto [a, b, c] = h.SealAndPost3();
  // A full segment: retriable, the caller loses the lease.
  CHECK(h.Commit(a, 0, protocol::kCommitFlagSegmentFull) == CommitVerdict::kLeaseLost);
  CHECK(h.last_why.is(WireError::kStaleLocation));
  CHECK_FALSE(h.t.has_completions());
  // A bad batch: b fails alone; a and c still complete in order around it.
  CHECK(h.Commit(b, b->post_id, Status(WireError::kCorruptMessage, "bad crc")) == CommitVerdict::kFailed);
  auto done = h.Take();
  REQUIRE(done.size() == 1);
  CHECK(done[0].batch == b);
  CHECK(done[0].status.is(WireError::kCorruptMessage));
  CHECK(h.Commit(c, 20) == CommitVerdict::kCommitted);
  CHECK(h.Commit(a, 0) == CommitVerdict::kCommitted);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{a, c});
  // An RPC error (the broker went away) is retriable.
  TrackedBatch* d = h.SealAndPost();
  CHECK(h.Commit(d, d->post_id, Status(Errc::kUnavailable, "gone")) == CommitVerdict::kLeaseLost);
}

TEST_CASE("shared: a lost lease completes batches whose offsets are known and resends the others",
          "[producer][acks][shared][lease]") {
  Harness h(PartitionMode::kShared);
  auto [a, b, c] = h.SealAndPost3();
  TrackedBatch* d = h.Seal();
  CHECK(h.Commit(b, 10) == CommitVerdict::kCommitted);  // known, but waits for a
  CHECK(h.Commit(c, -1) == CommitVerdict::kCommitted);  // committed, offset unknown
  CHECK_FALSE(h.t.has_completions());
  h.t.LeaseLost(0);
  REQUIRE(Ok(h.Take()) == std::vector<TrackedBatch*>{b});
  CHECK_FALSE(c->committed);
  REQUIRE(AckTrackerTestPeer::queued(h.t) == 3);
  h.NewLease(-1, Position(0), Offset(0));
  CHECK(h.Post() == a);
  CHECK(h.Post() == c);
  CHECK(h.Post() == d);
}

}  // namespace
}  // namespace rdmq::producer

// Idempotence after a failed batch (the producer bumps its epoch and renumbers what follows).
namespace rdmq::producer {
namespace {

TEST_CASE("a batch failed for good: batches before it go first, the ones after it wait to be renumbered",
          "[producer][acks][idempotence]") {
  Harness h(PartitionMode::kExclusive);
  TrackedBatch* a = h.SealAndPost();  // sequences 0..9
  TrackedBatch* b = h.Seal();         // 10..19: cannot be sent
  TrackedBatch* c = h.Seal();         // 20..29
  TrackedBatch* d = h.Seal();         // 30..39
  CHECK_FALSE(h.t.sequence_broken());
  h.t.Refused(Status(WireError::kRecordTooLarge, "too large"));  // b
  CHECK(h.t.sequence_broken());
  CHECK(h.t.BlockedByGap());           // c comes after b
  CHECK_FALSE(h.t.ReadyToRenumber());  // a is still in flight
  REQUIRE(h.Ack(100) == AckVerdict::kConfirmed);
  const auto done = h.Take();
  REQUIRE(done.size() == 2);
  CHECK(done[0].batch == b);
  CHECK(done[0].status.is(WireError::kRecordTooLarge));
  CHECK(done[1].batch == a);
  CHECK(done[1].status.ok());
  REQUIRE(h.t.ReadyToRenumber());
  std::vector<TrackedBatch*> rewritten;
  const int32_t next = h.t.Renumber([&](TrackedBatch* x) { rewritten.push_back(x); });
  CHECK(rewritten == std::vector<TrackedBatch*>{c, d});
  CHECK(c->base_sequence == 0);
  CHECK(d->base_sequence == 10);
  CHECK(next == 20);
  CHECK_FALSE(h.t.sequence_broken());
  CHECK_FALSE(h.t.BlockedByGap());
}

TEST_CASE("after a lost lease, batches before the failed one are resolved at the old epoch first",
          "[producer][acks][idempotence][lease]") {
  Harness h(PartitionMode::kShared);
  TrackedBatch* a = h.SealAndPost();  // 0..9, in flight
  TrackedBatch* b = h.SealAndPost();  // 10..19, refused for good
  TrackedBatch* c = h.Seal();         // 20..29
  CHECK(
      h.Commit(b, b->post_id, Result<protocol::CommitResponse>(Status(WireError::kCorruptMessage, "bad"))) ==
      CommitVerdict::kFailed);
  CHECK(h.t.sequence_broken());
  h.t.LeaseLost(0);  // a goes back to the queue, in front of c
  CHECK_FALSE(h.t.BlockedByGap());
  CHECK_FALSE(h.t.ReadyToRenumber());  // a first, at the old epoch
  h.NewLease(-1, Position(0), Offset(0));
  CHECK(h.Post() == a);
  CHECK(h.t.BlockedByGap());  // c waits
  CHECK(h.Commit(a, 0) == CommitVerdict::kCommitted);
  CHECK(h.t.ReadyToRenumber());
  CHECK(h.t.Renumber([](TrackedBatch*) {}) == 10);
  CHECK(c->base_sequence == 0);
}

TEST_CASE("a delivery timeout fails everything and restarts the delivery clock",
          "[producer][acks][idempotence]") {
  Harness h(PartitionMode::kExclusive);
  h.SealAndPost();
  h.Seal();
  h.t.LeaseLost(10 * kMs);
  REQUIRE(h.t.DeliveryExpired(10 * kMs + 1001 * kMs));
  h.t.FailAll(Status(Errc::kTimeout, "delivery timeout"));
  CHECK(h.Take().size() == 2);
  CHECK(h.t.ReadyToRenumber());  // nothing left: the next batch starts a new epoch
  CHECK(h.t.Renumber([](TrackedBatch*) { FAIL("nothing to renumber"); }) == 0);
  // A later batch waits its own delivery.timeout.ms, from its first failed attempt.
  CHECK_FALSE(h.t.DeliveryExpired(5000 * kMs));
  h.Seal();
  h.t.LeaseUnavailable(5000 * kMs);
  CHECK_FALSE(h.t.DeliveryExpired(5900 * kMs));
  CHECK(h.t.DeliveryExpired(6001 * kMs));
}

TEST_CASE("a lease lost while nothing waits starts no delivery clock", "[producer][acks][lease]") {
  Harness h(PartitionMode::kExclusive);
  h.SealAndPost();
  REQUIRE(h.Ack(100) == AckVerdict::kConfirmed);
  h.Take();
  h.t.LeaseLost(10 * kMs);  // e.g. released after lease.idle.ms
  h.t.LeaseUnavailable(20 * kMs);
  h.Seal();
  CHECK_FALSE(h.t.DeliveryExpired(100'000 * kMs));
}

TEST_CASE("the mode changes between leases", "[producer][acks][lease]") {
  Harness h(PartitionMode::kExclusive);
  TrackedBatch* a = h.Seal();
  h.t.set_mode(PartitionMode::kShared);
  h.mode = PartitionMode::kShared;
  CHECK(h.t.mode() == PartitionMode::kShared);
  h.NewLease(-1, Position(0), Offset(0));
  CHECK(h.Post() == a);
  // Shared rules now: the Commit response with its offset completes it.
  CHECK(h.Commit(a, 7) == CommitVerdict::kCommitted);
  auto done = h.Take();
  REQUIRE(done.size() == 1);
  CHECK(done[0].batch == a);
  CHECK(a->base_offset == Offset(7));
}

TEST_CASE("moving to another broker: every batch not complete leaves in order, the gap goes along",
          "[producer][acks][cluster]") {
  Harness h(PartitionMode::kShared);
  TrackedBatch* a = h.SealAndPost();  // 0..9: committed with its offset: in the log
  TrackedBatch* b = h.SealAndPost();  // 10..19: written, no answer yet
  TrackedBatch* c = h.SealAndPost();  // 20..29: refused for good
  TrackedBatch* d = h.Seal();         // 30..39: queued
  CHECK(h.Commit(a, 0) == CommitVerdict::kCommitted);
  CHECK(
      h.Commit(c, c->post_id, Result<protocol::CommitResponse>(Status(WireError::kCorruptMessage, "bad"))) ==
      CommitVerdict::kFailed);
  h.t.LeaseLost(5 * kMs);  // b goes back to the queue in front of d
  const auto done = h.Take();
  REQUIRE(done.size() == 2);  // a (its Commit returned its offset), then c (failed)
  CHECK(done[0].batch == a);
  CHECK(done[1].batch == c);
  CHECK(done[1].status.is(WireError::kCorruptMessage));
  const int32_t gap = h.t.gap();
  CHECK(gap == 20);
  CHECK(h.t.waiting_since() == 5 * kMs);  // the delivery clock goes along too
  const std::deque<TrackedBatch*> moved = h.t.TakeAll();
  CHECK(moved == std::deque<TrackedBatch*>{b, d});
  CHECK(h.t.idle());
  CHECK_FALSE(h.t.sequence_broken());
  CHECK_FALSE(h.t.DeliveryExpired(100'000 * kMs));  // nothing waits here any more
  CHECK_FALSE(h.t.has_completions());

  // The other broker's tracker takes them with the gap: b first at the old epoch, d renumbered.
  Harness other(PartitionMode::kShared);
  for (TrackedBatch* x : moved) other.t.Enqueue(x);
  other.t.RestoreGap(gap);
  other.t.LeaseUnavailable(5 * kMs);
  CHECK(other.t.DeliveryExpired(5 * kMs + 1001 * kMs));
  CHECK_FALSE(other.t.BlockedByGap());
  other.NewLease(-1, Position(0), Offset(0));
  CHECK(other.Post() == b);
  CHECK(other.t.BlockedByGap());
  CHECK(other.Commit(b, 10) == CommitVerdict::kCommitted);
  CHECK(other.t.ReadyToRenumber());
  CHECK(other.t.Renumber([](TrackedBatch*) {}) == 10);
  CHECK(d->base_sequence == 0);
}

TEST_CASE("moving an exclusive partition: the batches in flight go first, then the queue",
          "[producer][acks][cluster]") {
  Harness h(PartitionMode::kExclusive);
  auto [a, b, c] = h.SealAndPost3();
  TrackedBatch* d = h.Seal();
  REQUIRE(h.Ack(100) == AckVerdict::kConfirmed);  // a is acknowledged
  CHECK(Ok(h.Take()) == std::vector<TrackedBatch*>{a});
  // Taken without a LeaseLost first (the caller normally loses the lease before).
  CHECK(h.t.TakeAll() == std::deque<TrackedBatch*>{b, c, d});
  CHECK(h.t.idle());
  CHECK_FALSE(AckTrackerTestPeer::have_ack(h.t));
}

TEST_CASE("shared with acks=all: a batch completes under an ack, not at its Commit answer nor a lost lease",
          "[producer][acks][shared]") {
  Harness h(PartitionMode::kShared);
  h.t.set_ack_gated(true);
  TrackedBatch* a = h.SealAndPost();  // position 0..100
  TrackedBatch* b = h.SealAndPost();  // 100..200
  CHECK(h.Commit(a, 0) == CommitVerdict::kCommitted);
  CHECK(h.Commit(b, 10) == CommitVerdict::kCommitted);
  CHECK_FALSE(h.t.has_completions());             // the leader committed them; the replicas may not hold them
  REQUIRE(h.Ack(100) == AckVerdict::kConfirmed);  // the high watermark covers a
  auto done = h.Take();
  REQUIRE(done.size() == 1);
  CHECK(done[0].batch == a);
  CHECK_FALSE(done[0].read_offset);  // its offset came with the Commit answer
  CHECK(a->base_offset == Offset(0));

  // The lease is lost before b is acknowledged: b is written again (or found stored when the
  // next lease opens), not taken as done.
  h.t.LeaseLost(5 * kMs);
  CHECK_FALSE(h.t.has_completions());
  REQUIRE(h.t.has_queued());
  CHECK(h.t.next() == b);
  h.NewLease(19, Position(200), Offset(20));  // the broker has b's sequences (10..19)
  done = h.Take();
  REQUIRE(done.size() == 1);
  CHECK(done[0].batch == b);
  CHECK(done[0].status.ok());
}

}  // namespace
}  // namespace rdmq::producer
