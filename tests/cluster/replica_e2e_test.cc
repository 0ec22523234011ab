// A follower's side of replication against real brokers (docs/protocol.md, "Replication"): the
// test plays a partition's leader by hand (tests/broker/raw_client.h) toward the broker that
// follows it. The partition is made with two replicas straight in ZooKeeper, as the agent would
// (rdmq's own CreateTopic still refuses replication.factor above 1 while leaders do not
// replicate); the controller elects its leader. Then: only the leader of the current epoch gets a
// replica lease; the leader's batches, WRITten into the window and committed, are taken whole
// (offsets, producer ids and epoch stamps kept) and the leader's high watermark exposed up to
// what the follower holds; a corrupt range, a gap or a batch without an epoch is refused and
// leaves the log as it was; truncation cuts the log back and the window follows. When the leader
// dies the follower leads at a newer epoch, the old lease is over, and Kafka clients read from
// it exactly what it took.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "broker/raw_client.h"
#include "cluster/cluster_fixture.h"
#include "rdmq/cluster/model.h"
#include "rdmq/coord/zk.h"
#include "rdmq/protocol/replica_messages.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::test {
namespace {

using nlohmann::json;
using protocol::Api;
using protocol::WireError;

// A batch of `n` records from `base`, stamped with leader epoch `epoch`, as a leader's log holds it.
std::string LeaderBatch(int64_t base, int n, int32_t epoch, const std::string& tag, int64_t producer = -1,
                        int32_t sequence = -1) {
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) values.push_back(tag + "-" + std::to_string(base + i));
  std::vector<storage::RecordInput> recs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    recs[static_cast<size_t>(i)].value = std::string_view(values[static_cast<size_t>(i)]);
  storage::BatchOptions o;
  o.base_offset = Offset(base);
  o.leader_epoch = epoch;
  o.producer_id = ProducerId(producer);
  o.producer_epoch = producer >= 0 ? 0 : -1;
  o.base_sequence = sequence;
  return storage::EncodeBatch(o, recs);
}

// Makes topic `name` with one partition on replicas `replicas` in ZooKeeper, copying the config
// of the existing topic `like` (replication.factor set to the replicas' count).
void MakeReplicatedTopic(ZooKeeperServer& zk, const std::string& like, const std::string& name,
                         const std::vector<int32_t>& replicas) {
  coord::SessionOptions o;
  o.connect = zk.connect();
  o.session_timeout = std::chrono::milliseconds(4000);
  auto session = coord::ZkSession::Connect(o);
  REQUIRE_OK(session);
  const std::string root = "/rdmq/topics/";
  auto seed = (*session)->Get(root + like);
  REQUIRE_OK(seed);
  auto t = cluster::DecodeTopic(seed->data, like, like);
  REQUIRE_OK(t);
  t->name = name;
  t->id += 1000;
  t->replicas = {replicas};
  for (auto& [k, v] : t->config) {
    if (k == "replication.factor") v = std::to_string(replicas.size());
    if (k == "partitions") v = "1";
  }
  REQUIRE_OK((*session)->Multi({coord::MultiOp::Create(root + name, cluster::EncodeTopic(*t)),
                                coord::MultiOp::Create(root + name + "/partitions", ""),
                                coord::MultiOp::Create(root + name + "/partitions/0", "")}));
}

struct Follower {
  Cluster& c;
  int id;
  std::unique_ptr<RawClient> raw;
  protocol::OpenReplicaResponse opened;

  Follower(Cluster& cluster, int broker) : c(cluster), id(broker) {
    client::ClientOptions o;
    o.bootstrap = c.brokers.at(id)->address();
    raw = std::make_unique<RawClient>(o);
  }
  Result<protocol::OpenReplicaResponse> Open(int32_t leader, int32_t epoch) {
    protocol::OpenReplicaRequest req;
    req.topic = "rep";
    req.partition = PartitionId(0);
    req.leader_id = leader;
    req.leader_epoch = epoch;
    req.ack_region.bytes = raw->ack_descriptor();
    auto r = raw->conn().Call<protocol::OpenReplicaResponse>(Api::kOpenReplica, req);
    if (r.ok()) {
      opened = *r;
      raw->Attach(r->lease);
    }
    return r;
  }
  // WRITEs `bytes` at the window's start and commits them under `epoch`.
  Result<protocol::CommitResponse> Commit(const std::string& bytes, int32_t epoch, Offset next, Offset hw) {
    const protocol::LeaseResponse& l = raw->lease();
    if (!bytes.empty()) RDMQ_RETURN_IF_ERROR(raw->Write(l.write_position, bytes, false));
    protocol::ReplicaCommitRequest req;
    req.lease_id = l.lease_id;
    req.leader_epoch = epoch;
    req.segment_base = l.segment.base_offset;
    req.position = l.write_position;
    req.length = static_cast<uint32_t>(bytes.size());
    req.next_offset = next;
    req.high_watermark = hw;
    auto r = raw->conn().Call<protocol::CommitResponse>(Api::kReplicaCommit, req);
    if (r.ok()) {
      protocol::LeaseResponse moved = l;
      moved.write_position = r->committed_position;
      raw->Attach(moved);
    }
    return r;
  }
  Result<protocol::LeaseResponse> Truncate(int32_t epoch, Offset end) {
    protocol::ReplicaTruncateRequest req;
    req.lease_id = raw->lease().lease_id;
    req.leader_epoch = epoch;
    req.end = end;
    auto r = raw->conn().Call<protocol::LeaseResponse>(Api::kReplicaTruncate, req);
    if (r.ok()) raw->Attach(*r);
    return r;
  }
};

TEST_CASE("replication: a follower takes its leader's batches whole and refuses everyone else",
          "[e2e][cluster][replication]") {
  START_CLUSTER(c);
  for (int id : {1, 2}) c.Start(id);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "seed"}), 0);
  MakeReplicatedTopic(zk, "seed", "rep", {1, 2});
  json part;
  REQUIRE(Eventually([&] {
    const RunResult r = c.Rdmq(2, {"topic", "describe", "rep", "--json"});
    if (r.code != 0) return false;
    part = ParseJson(r)["partitions"][0];
    return part["leader"].get<int>() >= 1 && part["isr"].size() == 2;
  }));
  const int leader = part["leader"].get<int>();
  const int32_t epoch = part["leader_epoch"].get<int32_t>();
  const int follower_id = leader == 1 ? 2 : 1;
  Follower f(c, follower_id);

  // Only the current epoch's leader gets a lease.
  auto other = f.Open(follower_id, epoch);
  CHECK(other.status().is(WireError::kNotLeader));
  CHECK(f.Open(leader, epoch - 1).status().is(WireError::kFencedLeaderEpoch));
  CHECK(f.Open(leader, epoch + 1).status().is(WireError::kUnknownLeaderEpoch));
  {
    // The leader itself takes no replica writes.
    Follower self(c, leader);
    CHECK(self.Open(leader, epoch).status().is(WireError::kNotLeader));
  }
  auto opened = f.Open(leader, epoch);
  REQUIRE_OK(opened);
  CHECK(opened->lease.next_offset == Offset(0));
  CHECK(opened->log_start == Offset(0));
  CHECK(opened->epochs.empty());

  // Three batches in one range, taken as written; the high watermark the leader passes on is
  // exposed up to what the follower holds.
  const std::string range =
      LeaderBatch(0, 3, epoch, "a") + LeaderBatch(3, 2, epoch, "a") + LeaderBatch(5, 4, epoch, "b", 7777, 0);
  auto c1 = f.Commit(range, epoch, Offset(9), Offset(3));
  REQUIRE_OK(c1);
  CHECK(c1->base_offset == Offset(0));
  CHECK(c1->high_watermark == Offset(3));
  // The high watermark alone, never past what the follower holds.
  auto hw = f.Commit("", epoch, kNoOffset, Offset(50));
  REQUIRE_OK(hw);
  CHECK(hw->high_watermark == Offset(9));

  // Refused, each leaving the log as it was (the reads after the failover below show it): a
  // flipped byte, a gap, a batch without an epoch or above the lease's, a range ending elsewhere
  // than the leader says, a producer's Commit on a replica lease.
  std::string bad = LeaderBatch(9, 2, epoch, "c");
  bad[bad.size() - 3] ^= 0x10;
  CHECK(f.Commit(bad, epoch, Offset(11), Offset(9)).status().is(WireError::kCorruptMessage));
  CHECK_FALSE(f.Commit(LeaderBatch(10, 2, epoch, "c"), epoch, Offset(12), Offset(9)).ok());
  CHECK_FALSE(f.Commit(LeaderBatch(9, 2, -1, "c"), epoch, Offset(11), Offset(9)).ok());
  CHECK_FALSE(f.Commit(LeaderBatch(9, 2, epoch + 1, "c"), epoch, Offset(11), Offset(9)).ok());
  CHECK_FALSE(f.Commit(LeaderBatch(9, 2, epoch, "c"), epoch, Offset(12), Offset(9)).ok());
  protocol::CommitRequest plain;
  plain.lease_id = f.raw->lease().lease_id;
  plain.segment_base = f.raw->lease().segment.base_offset;
  plain.position = f.raw->lease().write_position;
  plain.length = 1;
  CHECK(f.raw->conn()
            .Call<protocol::CommitResponse>(Api::kCommit, plain)
            .status()
            .is(WireError::kInvalidRequest));

  // The lease still works after the refusals. Then the log is cut back to offset 9 (not below
  // what is exposed: refused), the window follows, and what is written next replaces the cut.
  REQUIRE_OK(f.Commit(LeaderBatch(9, 2, epoch, "c"), epoch, Offset(11), Offset(9)));
  CHECK(f.Truncate(epoch, Offset(5)).status().is(WireError::kInvalidRequest));  // below the exposed 9
  auto cut = f.Truncate(epoch, Offset(9));
  REQUIRE_OK(cut);
  CHECK(cut->next_offset == Offset(9));
  REQUIRE_OK(f.Commit(LeaderBatch(9, 1, epoch, "d"), epoch, Offset(10), Offset(10)));

  // A lease is for its epoch only.
  CHECK(f.Commit(LeaderBatch(10, 1, epoch, "e"), epoch + 1, Offset(11), Offset(10))
            .status()
            .is(WireError::kInvalidRequest));
  // Reopened, the follower reports its log and epochs to the leader.
  auto again = f.Open(leader, epoch);
  REQUIRE_OK(again);
  CHECK(again->lease.next_offset == Offset(10));
  CHECK(again->high_watermark == Offset(10));
  CHECK(again->epochs == std::vector<protocol::EpochEntry>{{epoch, Offset(0)}});

  // The leader dies: the follower, in the ISR, is elected at a newer epoch. It serves what it
  // took, exactly: the refused ranges and the cut records are not there. The old leader's lease
  // ended with the old epoch: its writes are refused.
  c.brokers.at(leader)->Kill();
  REQUIRE(Eventually([&] {
    const RunResult r = c.Rdmq(follower_id, {"topic", "describe", "rep", "--json"});
    if (r.code != 0) return false;
    part = ParseJson(r)["partitions"][0];
    return part["leader"].get<int>() == follower_id;
  }));
  CHECK(part["leader_epoch"].get<int32_t>() > epoch);
  // Its window is revoked: the deposed leader's WRITE itself fails, and so does its commit.
  auto stale = f.Commit(LeaderBatch(10, 1, epoch, "z"), epoch, Offset(11), Offset(11));
  CHECK((stale.status().is(fabric::FabricErrc::kRevoked) || stale.status().is(fabric::FabricErrc::kBadKey)));
  CHECK(f.Commit("", epoch, kNoOffset, Offset(11)).status().is(WireError::kLeaseExpired));
  // It took the producers' state with the batches: an idempotent producer continues there.
  client::ClientOptions at_new;
  at_new.bootstrap = c.brokers.at(follower_id)->address();
  RawClient producer(at_new);
  REQUIRE_OK(producer.Open("rep", 0, protocol::ProduceMode::kExclusive, ProducerId(7777), 0));
  CHECK(producer.lease().last_sequence == 3);
  const RunResult read = c.Kcat(follower_id, {"-C", "-t", "rep", "-e", "-q", "-f", "%o %s\n"});
  REQUIRE_RUN(read, 0);
  CHECK(read.out == "0 a-0\n1 a-1\n2 a-2\n3 a-3\n4 a-4\n5 b-5\n6 b-6\n7 b-7\n8 b-8\n9 d-9\n");
}

}  // namespace
}  // namespace rdmq::test
