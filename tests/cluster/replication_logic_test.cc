// The replication protocol's decisions without I/O: the leader epoch cache and a follower's
// truncation point when it meets a new leader (KIP-101/279), and the leader's replica set (high
// watermark, acks=all admission, ISR shrink and expand by replica.lag.time.max.ms). The
// scenarios are the classic ones where truncating to the high watermark alone loses or diverges.
#include <catch2/catch.hpp>

#include "rdmq/cluster/leader_epochs.h"
#include "rdmq/cluster/replica_set.h"
#include "support/test_util.h"

namespace rdmq::cluster {
namespace {

LeaderEpochs Epochs(std::vector<std::pair<int32_t, int64_t>> entries) {
  LeaderEpochs e;
  for (auto [epoch, start] : entries) REQUIRE_OK(e.Observe(epoch, Offset(start)));
  return e;
}

TEST_CASE("leader epochs: built from batches in order, answered as KIP-279 says", "[cluster][replication]") {
  LeaderEpochs e;
  REQUIRE_OK(e.Observe(-1, Offset(0)));  // unstamped: ignored
  CHECK(e.latest() == -1);
  REQUIRE_OK(e.Observe(0, Offset(0)));
  REQUIRE_OK(e.Observe(0, Offset(5)));  // the same epoch: nothing new
  REQUIRE_OK(e.Observe(2, Offset(10)));
  REQUIRE_OK(e.Observe(5, Offset(30)));
  CHECK(e.Observe(3, Offset(40)).is(Errc::kInvalidArgument));  // out of order: refused, unchanged
  CHECK(e.entries() == std::vector<LeaderEpochs::Entry>{{0, Offset(0)}, {2, Offset(10)}, {5, Offset(30)}});
  CHECK(e.latest() == 5);
  // The end of an epoch is the start of the next; of the latest, the log end.
  CHECK(*e.EndOf(0, Offset(50)) == std::pair(0, Offset(10)));
  CHECK(*e.EndOf(1, Offset(50)) == std::pair(0, Offset(10)));  // 1 unknown: the largest below
  CHECK(*e.EndOf(4, Offset(50)) == std::pair(2, Offset(30)));
  CHECK(*e.EndOf(9, Offset(50)) == std::pair(5, Offset(50)));
  CHECK_FALSE(Epochs({{3, 0}}).EndOf(2, Offset(9)).has_value());
  // Truncation and retention keep it in step with the log.
  LeaderEpochs t = e;
  t.TruncateTo(Offset(30));
  CHECK(t.latest() == 2);
  t.TruncateTo(Offset(10));
  CHECK(t.latest() == 0);
  LeaderEpochs r = e;
  r.ClearBelow(Offset(12));
  CHECK(r.entries() == std::vector<LeaderEpochs::Entry>{{2, Offset(12)}, {5, Offset(30)}});
}

// The follower's rounds with a leader whose cache is `leader` and log end `leader_end`, run
// where both caches are known (as the leader does with the cache OpenReplica brought it).
Offset TruncationPoint(const LeaderEpochs& follower, Offset follower_end, Offset follower_start,
                       const LeaderEpochs& leader, Offset leader_end, int* rounds = nullptr) {
  return FollowerTruncationPoint(follower, follower_end, follower_start, leader, leader_end, rounds);
}

TEST_CASE("truncation point: a follower keeps exactly what it shares with the new leader",
          "[cluster][replication]") {
  // KIP-101 scenario 1: A (leader, epoch 1) and B both hold offsets 0..1 of epoch 0; B was told
  // the high watermark 1 only. B restarts: HW truncation would drop offset 1, which A (and an
  // acks=all producer) counts as committed. By epochs B keeps everything A has of epoch 0.
  const LeaderEpochs b = Epochs({{0, 0}});
  const LeaderEpochs a = Epochs({{0, 0}});
  CHECK(TruncationPoint(b, Offset(2), Offset(0), a, Offset(2)) == Offset(2));

  // KIP-101 scenario 2 (divergence): A wrote offset 1 in epoch 0 and died before B had it; B,
  // elected at epoch 1, wrote its own offset 1. A returns as a follower: it must drop its offset 1.
  const LeaderEpochs a2 = Epochs({{0, 0}});          // A: 0..1 of epoch 0
  const LeaderEpochs b2 = Epochs({{0, 0}, {1, 1}});  // B: 0 of epoch 0, 1.. of epoch 1
  CHECK(TruncationPoint(a2, Offset(2), Offset(0), b2, Offset(3)) == Offset(1));

  // A follower with an epoch the leader never had: its records of epoch 2 run to 20, the
  // leader's end at 15 (where its epoch 3 began): they diverge at 15. It takes two rounds: the
  // leader answers epoch 3, which the follower never had, so it asks again about its epoch 2.
  const LeaderEpochs f = Epochs({{0, 0}, {2, 10}, {4, 20}});
  const LeaderEpochs l = Epochs({{0, 0}, {2, 10}, {3, 15}});
  int rounds = 0;
  CHECK(TruncationPoint(f, Offset(25), Offset(0), l, Offset(40), &rounds) == Offset(15));
  CHECK(rounds == 2);
  const LeaderEpochs g = Epochs({{0, 0}, {4, 12}});
  CHECK(TruncationPoint(g, Offset(25), Offset(0), l, Offset(40)) == Offset(10));
  // Never past its own end; the leader knowing nothing that old: back to the log start.
  CHECK(TruncationPoint(a, Offset(2), Offset(0), Epochs({{0, 0}}), Offset(9)) == Offset(2));
  CHECK(TruncationPoint(g, Offset(25), Offset(3), Epochs({{5, 30}}), Offset(40)) == Offset(3));
  // A follower that knows no epoch (an empty log) keeps its (empty) log.
  CHECK(TruncationPoint(LeaderEpochs{}, Offset(0), Offset(0), l, Offset(40)) == Offset(0));
  // Identical logs: nothing is cut.
  CHECK(TruncationPoint(l, Offset(40), Offset(0), l, Offset(40)) == Offset(40));
}

constexpr uint64_t kSec = 1'000'000'000;

ReplicaSet Three(uint64_t now = 0) {
  ReplicaSetOptions o;
  o.leader = 1;
  o.replicas = {1, 2, 3};
  o.isr = {1, 2, 3};
  o.min_insync_replicas = 2;
  o.lag_time_max_ns = 10 * kSec;
  o.now_ns = now;
  return ReplicaSet(o);
}

TEST_CASE("replica set: the high watermark is what every in-sync replica holds, and never goes back",
          "[cluster][replication]") {
  ReplicaSet r = Three();
  r.OnAppend(Offset(100), 1);
  CHECK(r.high_watermark() == Offset(0));
  REQUIRE_OK(r.OnFollowerAck(2, Offset(60), 2));
  CHECK(r.high_watermark() == Offset(0));  // 3 holds nothing yet
  REQUIRE_OK(r.OnFollowerAck(3, Offset(40), 3));
  CHECK(r.high_watermark() == Offset(40));
  REQUIRE_OK(r.OnFollowerAck(3, Offset(30), 4));  // an older ack overtaken: ignored
  CHECK(r.high_watermark() == Offset(40));
  REQUIRE_OK(r.OnFollowerAck(3, Offset(100), 5));
  CHECK(r.high_watermark() == Offset(60));
  CHECK(r.OnFollowerAck(2, Offset(101), 6).is(Errc::kInvalidArgument));
  REQUIRE_OK(r.OnFollowerAck(9, Offset(100), 6));  // not a replica: ignored
  // Without 2 in the ISR the high watermark is 3's and the leader's.
  r.SetIsr({1, 3});
  CHECK(r.high_watermark() == Offset(100));
  // Back in: the high watermark does not go back to 2's 60.
  r.SetIsr({1, 2, 3});
  CHECK(r.high_watermark() == Offset(100));
  CHECK_OK(r.CheckAcksAll());
  r.SetIsr({1});
  CHECK(r.CheckAcksAll().is(Errc::kFailedPrecondition));
  CHECK(r.CheckAcksAll().ToString().find("min.insync.replicas is 2") != std::string::npos);
}

TEST_CASE("replica set: a follower that stops keeping up leaves the ISR and one that catches up rejoins",
          "[cluster][replication]") {
  ReplicaSet r = Three(0);
  // Under a steady load both followers keep up with what the leader had at their last ack.
  uint64_t t = 0;
  for (int i = 1; i <= 20; ++i) {
    t = static_cast<uint64_t>(i) * kSec;
    r.OnAppend(Offset(i * 100), t);
    REQUIRE_OK(r.OnFollowerAck(2, Offset((i - 1) * 100), t));        // one round behind: still caught up
    if (i <= 5) REQUIRE_OK(r.OnFollowerAck(3, Offset(i * 100), t));  // 3 stops acking at 5 s
  }
  CHECK_FALSE(r.ProposedIsr(5 * kSec).has_value());
  auto shrink = r.ProposedIsr(t);
  REQUIRE(shrink.has_value());
  CHECK(*shrink == std::vector<BrokerId>{1, 2});
  r.SetIsr(*shrink);
  CHECK(r.high_watermark() == Offset(1900));
  // 3 comes back and catches up: it holds the high watermark, so it rejoins.
  t += kSec;
  r.OnAppend(Offset(2100), t);
  REQUIRE_OK(r.OnFollowerAck(2, Offset(2000), t));
  REQUIRE_OK(r.OnFollowerAck(3, Offset(1000), t));
  CHECK_FALSE(r.ProposedIsr(t).has_value());  // behind the high watermark: not yet
  t += kSec;
  REQUIRE_OK(r.OnFollowerAck(3, Offset(2100), t));
  auto expand = r.ProposedIsr(t);
  REQUIRE(expand.has_value());
  CHECK(*expand == std::vector<BrokerId>{1, 2, 3});
  r.SetIsr(*expand);
  // The leader always stays.
  r.SetIsr({2, 3});
  CHECK(r.isr().front() == 1);
}

}  // namespace
}  // namespace rdmq::cluster
