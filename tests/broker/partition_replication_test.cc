// A replicated partition's leader side in the partition itself (broker/partition.h): with a
// replica set, readers see only what every in-sync replica holds (RaiseHighWatermark), acks=all
// waiters (WhenReplicated) complete once the high watermark covers them, in offset order, and
// fail with NOT_LEADER when the leadership ends; without the replica set a replicated partition
// answers acks=all with NOT_ENOUGH_REPLICAS. The followers' acks are played by the test.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "broker/partition.h"
#include "rdmq/common/clock.h"
#include "rdmq/storage/record_batch.h"
#include "support/test_util.h"

namespace rdmq::broker::internal {
namespace {

using protocol::WireError;

struct Leader {
  test::TempDir dir{"rdmq-partition-replication"};
  std::unique_ptr<fabric::Fabric> fabric;
  std::shared_ptr<Partition> p;

  Leader() {
    fabric::FabricOptions fo;
    auto f = fabric::Fabric::Open(fo);
    REQUIRE_OK(f);
    fabric = std::move(*f);
    metadata::TopicInfo t;
    t.name = "rep";
    t.id = TopicId(7);
    t.config.replication_factor = 3;
    t.config.min_insync_replicas = 2;
    t.config.durability = metadata::Durability::kVisibility;
    PartitionOptions o;
    o.fabric = fabric.get();
    o.data_dir = dir.str();
    o.lease_ms = 10000;
    o.checkpoint_interval_ms = 1000;
    auto opened = Partition::Open(t, PartitionId(0), o);
    REQUIRE_OK(opened);
    p = std::move(*opened);
  }
  ~Leader() {
    MutexLock lock(p->mu);
    p->SetReplicaSet(nullptr);
    p->CloseLog();
    (void)p->MarkDeleted(false);
  }
  // Appends `n` records as the leader's log takes them; the log end after.
  Offset Append(int n) NO_THREAD_SAFETY_ANALYSIS {
    std::vector<storage::RecordInput> recs(static_cast<size_t>(n));
    for (auto& r : recs) r.value = "v";
    auto a = p->log().Append(recs);
    REQUIRE_OK(a);
    REQUIRE_OK(p->SyncSegments());
    return a->next_offset;
  }
};

TEST_CASE(
    "replicated partition: the high watermark is what the in-sync replicas hold and acks=all waits for it",
    "[partition][replication]") {
  Leader l;
  Partition& p = *l.p;
  MutexLock lock(p.mu);
  REQUIRE(p.replicated());
  std::vector<std::string> done;
  auto waiter = [&done](const std::string& name) {
    return [&done, name](const Status& s) {
      done.push_back(name + (s.ok() ? ":ok" : ":" + std::string(s.context())));
    };
  };

  // Not replicating yet (just elected): acks=all is NOT_ENOUGH_REPLICAS.
  Status early;
  p.WhenReplicated(Offset(1), [&early](const Status& s) { early = s; });
  CHECK(early.is(WireError::kNotEnoughReplicas));

  cluster::ReplicaSetOptions o;
  o.leader = 1;
  o.replicas = {1, 2, 3};
  o.isr = {1, 2, 3};
  o.min_insync_replicas = 2;
  o.now_ns = MonoNanos();
  p.SetReplicaSet(std::make_unique<cluster::ReplicaSet>(o));

  const Offset five = l.Append(5);
  const Offset ten = l.Append(5);
  CHECK(five == Offset(5));
  CHECK_FALSE(p.RaiseHighWatermark());  // nobody else holds anything
  CHECK(p.log().HighWatermark() == Offset(0));
  p.WhenReplicated(ten, waiter("ten"));
  p.WhenReplicated(five, waiter("five"));
  p.WhenReplicated(Offset(0), waiter("zero"));  // nothing to wait for
  CHECK(done == std::vector<std::string>{"zero:ok"});

  // One follower holding everything is not enough while the other is in the ISR.
  REQUIRE_OK(p.replica_set()->OnFollowerAck(2, ten, MonoNanos()));
  CHECK_FALSE(p.RaiseHighWatermark());
  REQUIRE_OK(p.replica_set()->OnFollowerAck(3, five, MonoNanos()));
  CHECK(p.RaiseHighWatermark());
  CHECK(p.log().HighWatermark() == five);
  CHECK(p.active().high_watermark == five);
  CHECK(done == std::vector<std::string>{"zero:ok", "five:ok"});

  // The lagging follower leaves the ISR: the high watermark moves to what the rest hold.
  p.replica_set()->SetIsr({1, 2});
  CHECK(p.RaiseHighWatermark());
  CHECK(p.log().HighWatermark() == ten);
  CHECK(done == std::vector<std::string>{"zero:ok", "five:ok", "ten:ok"});
  CHECK(p.replica_set()->CheckAcksAll().ok());  // two in sync, min.insync.replicas 2
  // The topic altered to min.insync.replicas 3: two are too few from now on.
  metadata::TopicConfig stricter = p.config();
  stricter.min_insync_replicas = 3;
  REQUIRE_OK(p.Reconfigure(stricter));
  CHECK_FALSE(p.replica_set()->CheckAcksAll().ok());
  stricter.min_insync_replicas = 2;
  REQUIRE_OK(p.Reconfigure(stricter));
  CHECK(p.replica_set()->CheckAcksAll().ok());

  // The leader alone: too few for acks=all, though its own appends are exposed at once.
  p.replica_set()->SetIsr({1});
  CHECK_FALSE(p.replica_set()->CheckAcksAll().ok());
  const Offset twelve = l.Append(2);
  CHECK(p.RaiseHighWatermark());
  CHECK(p.log().HighWatermark() == twelve);

  // Leadership ends with a waiter pending: it fails with NOT_LEADER.
  p.replica_set()->SetIsr({1, 2});
  const Offset fifteen = l.Append(3);
  Status pending = Status::Ok();
  bool called = false;
  p.WhenReplicated(fifteen, [&](const Status& s) {
    pending = s;
    called = true;
  });
  CHECK_FALSE(called);
  p.SetReplicaSet(nullptr);
  CHECK(called);
  CHECK(pending.is(WireError::kNotLeader));
  CHECK(p.log().HighWatermark() == twelve);  // nothing past what the replicas held
}

}  // namespace
}  // namespace rdmq::broker::internal
