// Replication between real brokers (docs/protocol.md, "Replication"; docs/replication.md). The
// partitions are made with two replicas straight in ZooKeeper, as the agent would (rdmq's own
// CreateTopic still refuses replication.factor above 1 while acks=all is not built); the
// controller elects their leaders.
//
// First the follower's side alone: the test plays a partition's leader by hand
// (tests/broker/raw_client.h), as a broker that is only its ZooKeeper registration, toward the
// real broker that follows it. Only the leader of the current epoch gets a
// replica lease; the leader's batches, WRITten into the window and committed, are taken whole
// (offsets, producer ids and epoch stamps kept) and the leader's high watermark exposed up to
// what the follower holds; a corrupt range, a gap or a batch without an epoch is refused and
// leaves the log as it was; truncation cuts the log back and the window follows. When the leader
// dies the follower leads at a newer epoch, the old lease is over, and Kafka clients read from
// it exactly what it took.
//
// Then two real brokers: the leader forwards what Kafka producers write to its follower, readers
// see it once the follower holds it, and each broker in turn takes over with every record at its
// offset; a broker that returns is fed what it missed and rejoins the ISR.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
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

// A broker that is only its registration: live to the controller, played by the test (it holds
// the ephemeral znode until the returned session closes). Nothing listens at its addresses.
std::unique_ptr<coord::ZkSession> FakeBroker(ZooKeeperServer& zk, int32_t id) {
  coord::SessionOptions o;
  o.connect = zk.connect();
  o.session_timeout = std::chrono::milliseconds(4000);
  auto session = coord::ZkSession::Connect(o);
  REQUIRE_OK(session);
  cluster::BrokerInfo b;
  b.id = id;
  b.control = "tcp:127.0.0.1:1";
  b.data = "tcp:127.0.0.1:1";
  b.fabric = "tcp";
  REQUIRE_OK((*session)->Create("/rdmq/brokers/ids/" + std::to_string(id), cluster::EncodeBroker(b),
                                coord::CreateMode::kEphemeral));
  return std::move(*session);
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
  const int follower_id = 2;
  const int leader = 3;  // played by the test
  c.Start(follower_id);
  REQUIRE_RUN(c.Rdmq(follower_id, {"topic", "create", "seed"}), 0);
  auto fake = FakeBroker(zk, leader);
  MakeReplicatedTopic(zk, "seed", "rep", {leader, follower_id});
  json part;
  REQUIRE(Eventually([&] {
    const RunResult r = c.Rdmq(follower_id, {"topic", "describe", "rep", "--json"});
    if (r.code != 0) return false;
    part = ParseJson(r)["partitions"][0];
    return part["leader"].get<int>() == leader && part["isr"].size() == 2;
  }));
  const int32_t epoch = part["leader_epoch"].get<int32_t>();
  Follower f(c, follower_id);

  // Only the current epoch's leader gets a lease (once the follower holds its replica).
  Status other;
  REQUIRE(Eventually([&] {
    other = f.Open(follower_id, epoch).status();
    return other.context().find("holds no replica") == std::string_view::npos;
  }));
  CHECK(other.is(WireError::kNotLeader));
  CHECK(f.Open(leader, epoch - 1).status().is(WireError::kFencedLeaderEpoch));
  CHECK(f.Open(leader, epoch + 1).status().is(WireError::kUnknownLeaderEpoch));
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
  fake.reset();
  REQUIRE(Eventually([&] {
    const RunResult r = c.Rdmq(follower_id, {"topic", "describe", "rep", "--json"});
    if (r.code != 0) return false;
    part = ParseJson(r)["partitions"][0];
    return part["leader"].get<int>() == follower_id;
  }));
  CHECK(part["leader_epoch"].get<int32_t>() > epoch);
  // Once the follower leads (it serves producers), it took the producers' state with the
  // batches: an idempotent producer continues there.
  client::ClientOptions at_new;
  at_new.bootstrap = c.brokers.at(follower_id)->address();
  RawClient producer(at_new);
  REQUIRE(Eventually(
      [&] { return producer.Open("rep", 0, protocol::ProduceMode::kExclusive, ProducerId(7777), 0).ok(); }));
  CHECK(producer.lease().last_sequence == 3);
  // The deposed leader's window is revoked: its WRITE itself fails, and so does its commit.
  auto stale = f.Commit(LeaderBatch(10, 1, epoch, "z"), epoch, Offset(11), Offset(11));
  CHECK((stale.status().is(fabric::FabricErrc::kRevoked) || stale.status().is(fabric::FabricErrc::kBadKey)));
  CHECK(f.Commit("", epoch, kNoOffset, Offset(11)).status().is(WireError::kLeaseExpired));
  const RunResult read = c.Kcat(follower_id, {"-C", "-t", "rep", "-e", "-q", "-f", "%o %s\n"});
  REQUIRE_RUN(read, 0);
  CHECK(read.out == "0 a-0\n1 a-1\n2 a-2\n3 a-3\n4 a-4\n5 b-5\n6 b-6\n7 b-7\n8 b-8\n9 d-9\n");
}

// Partition 0 of `topic` as broker `via` describes it (null when it does not answer).
json DescribePartition(Cluster& c, int via, const std::string& topic = "rep") {
  const RunResult r = c.Rdmq(via, {"topic", "describe", topic, "--json"});
  if (r.code != 0) return json();
  return ParseJson(r)["partitions"][0];
}

// Whether a described partition has a leader.
bool Led(const json& part) { return !part.is_null() && part["leader"].get<int>() >= 1; }

// Lines "<tag>-<from>" .. "<tag>-<to - 1>", one record each.
std::string Records(const std::string& tag, int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i) out += tag + "-" + std::to_string(i) + "\n";
  return out;
}

// What kcat reads of partition 0 of `topic` at broker `via`, as "<offset> <value>" lines.
std::string ReadAll(Cluster& c, int via, const std::string& topic = "rep") {
  const RunResult r = c.Kcat(via, {"-C", "-t", topic, "-p", "0", "-e", "-q", "-f", "%o %s\n"});
  return r.code == 0 ? r.out : "kcat failed: " + r.err;
}

// Creates `topic` (one partition) with two replicas and `config` through broker 1, and waits
// until both replicas are in sync; returns the partition as described.
json CreateReplicated(Cluster& c, const std::string& topic, const std::vector<std::string>& config = {}) {
  std::vector<std::string> args{"topic", "create", topic, "-c", "replication.factor=2"};
  for (const std::string& kv : config) args.insert(args.end(), {"-c", kv});
  REQUIRE_RUN(c.Rdmq(1, args), 0);
  json part;
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, 1, topic);
    return Led(part) && part["isr"].size() == 2;
  }));
  return part;
}

// A described partition's leader, its other replica, and one of `brokers` holding none (0 if all do).
struct Roles {
  int leader = 0, follower = 0, spare = 0;
};
Roles RolesOf(const json& part, const std::vector<int>& brokers) {
  Roles r;
  r.leader = part["leader"].get<int>();
  for (int id : brokers) {
    const bool holds =
        std::find(part["replicas"].begin(), part["replicas"].end(), id) != part["replicas"].end();
    if (id != r.leader && holds) r.follower = id;
    if (!holds) r.spare = id;
  }
  return r;
}

std::string Numbered(const std::string& records, int first) {
  std::string out;
  size_t at = 0;
  int n = first;
  while (at < records.size()) {
    const size_t nl = records.find('\n', at);
    out += std::to_string(n++) + " " + records.substr(at, nl - at) + "\n";
    at = nl + 1;
  }
  return out;
}

TEST_CASE("replication: the leader forwards its log to its follower, which can take over with all of it",
          "[e2e][cluster][replication]") {
  START_CLUSTER(c);
  for (int id : {1, 2}) c.Start(id);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "seed"}), 0);
  MakeReplicatedTopic(zk, "seed", "rep", {1, 2});
  json part;
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, 1);
    return !part.is_null() && part["leader"].get<int>() >= 1 && part["isr"].size() == 2;
  }));
  const int first = part["leader"].get<int>();
  const int second = first == 1 ? 2 : 1;
  const int32_t epoch = part["leader_epoch"].get<int32_t>();
  {
    // The leader itself takes no replica writes.
    Follower self(c, first);
    CHECK(self.Open(first, epoch).status().is(WireError::kNotLeader));
  }

  // Written at the leader, readable there once the follower holds it (the high watermark).
  const std::string a = Records("a", 0, 30);
  REQUIRE_RUN(c.Kcat(first, {"-P", "-t", "rep", "-p", "0"}, a), 0);
  const std::string a_read = Numbered(a, 0);
  REQUIRE(Eventually([&] { return ReadAll(c, first) == a_read; }));

  // The leader dies: the follower, in the ISR, takes over with every record, at the same offsets.
  c.brokers.at(first)->Kill();
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, second);
    return !part.is_null() && part["leader"].get<int>() == second;
  }));
  CHECK(part["leader_epoch"].get<int32_t>() > epoch);
  CHECK(ReadAll(c, second) == a_read);
  // Alone in the ISR, it takes writes at once.
  const std::string b = Records("b", 30, 45);
  REQUIRE_RUN(c.Kcat(second, {"-P", "-t", "rep", "-p", "0"}, b), 0);
  REQUIRE(Eventually([&] { return ReadAll(c, second) == a_read + Numbered(b, 30); }));

  // The old leader returns as a follower: the new leader feeds it what it missed, and once it
  // holds everything it rejoins the ISR.
  c.Start(first);
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, second);
    return !part.is_null() && part["isr"].size() == 2;
  }));
  const std::string d = Records("d", 45, 50);
  REQUIRE_RUN(c.Kcat(second, {"-P", "-t", "rep", "-p", "0"}, d), 0);
  const std::string all = a_read + Numbered(b, 30) + Numbered(d, 45);
  REQUIRE(Eventually([&] { return ReadAll(c, second) == all; }));

  // The second leader dies too: the first, back in the ISR, leads with all of it.
  c.brokers.at(second)->Kill();
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, first);
    return !part.is_null() && part["leader"].get<int>() == first;
  }));
  CHECK(ReadAll(c, first) == all);
}

TEST_CASE("replication: acks=all waits for the in-sync replicas and is refused below min.insync.replicas",
          "[e2e][cluster][replication]") {
  START_CLUSTER(c);
  for (int id : {1, 2}) c.Start(id);
  REQUIRE_RUN(
      c.Rdmq(1, {"topic", "create", "all", "-c", "replication.factor=2", "-c", "min.insync.replicas=2"}), 0);
  json part;
  auto describe = [&](int via) {
    part = DescribePartition(c, via, "all");
    return Led(part);
  };
  REQUIRE(Eventually([&] { return describe(1) && part["isr"].size() == 2; }));
  CHECK(part["replicas"].size() == 2);
  const int leader = part["leader"].get<int>();
  const int follower = leader == 1 ? 2 : 1;
  auto produce = [&](const std::string& records, const std::string& acks) {
    return c.Kcat(leader,
                  {"-P", "-t", "all", "-p", "0", "-X", "acks=" + acks, "-X", "message.timeout.ms=5000"},
                  records);
  };
  auto read = [&] { return ReadAll(c, leader, "all"); };

  // Both in sync: acknowledged, and readable at once (the follower held it before the answer).
  const std::string a = Records("a", 0, 10);
  REQUIRE_RUN(produce(a, "all"), 0);
  CHECK(read() == Numbered(a, 0));

  // The follower dies and leaves the ISR: below min.insync.replicas acks=all is refused before
  // anything is written; acks=1 is still taken.
  c.brokers.at(follower)->Kill();
  REQUIRE(Eventually([&] { return describe(leader) && part["isr"].size() == 1; }));
  // (The controller shrank the ISR; the leader learns it from ZooKeeper a moment later, and takes
  // acks=all writes until then: those are acknowledged for good and read back below.)
  std::string taken;
  RunResult refused;
  for (int i = 0; i < 50; ++i) {
    const std::string x = "x-" + std::to_string(i) + "\n";
    refused = c.Kcat(leader, {"-P", "-t", "all", "-p", "0", "-X", "acks=all", "-X", "retries=0"}, x);
    if (refused.code != 0) break;
    taken += x;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(refused.err);
  CHECK(refused.code != 0);
  CHECK(
      (Contains(refused.err, "NOT_ENOUGH_REPLICAS") || Contains(refused.err, "Not enough in-sync replicas")));
  const std::string ax = Numbered(a + taken, 0);
  const int next = 10 + static_cast<int>(std::count(taken.begin(), taken.end(), '\n'));
  const std::string b = Records("b", 10, 15);
  REQUIRE_RUN(produce(b, "1"), 0);
  CHECK(read() == ax + Numbered(b, next));

  // Back, it is fed what it missed, rejoins the ISR, and acks=all is taken again.
  c.Start(follower);
  REQUIRE(Eventually([&] { return describe(leader) && part["isr"].size() == 2; }));
  const std::string d = Records("d", 15, 20);
  REQUIRE_RUN(produce(d, "all"), 0);
  const std::string all = ax + Numbered(b, next) + Numbered(d, next + 5);
  CHECK(read() == all);

  // The leader dies: the follower has every acknowledged record.
  c.brokers.at(leader)->Kill();
  REQUIRE(Eventually([&] { return describe(follower) && part["leader"].get<int>() == follower; }));
  const RunResult after = c.Kcat(follower, {"-C", "-t", "all", "-p", "0", "-e", "-q", "-f", "%o %s\n"});
  REQUIRE_RUN(after, 0);
  CHECK(after.out == all);
}

TEST_CASE("replication: rdmq's own producer with acks=all is answered once the follower holds its records",
          "[e2e][cluster][replication]") {
  // A stalled follower stays in the ISR here (a long lag limit and ZooKeeper session), so that
  // what acks=all waits for is the follower itself.
  RDMQ_START_ZOOKEEPER(zk);
  Cluster c(
      zk, {"--set", "replica.lag.time.max.ms=120000", "--set", "cluster.zookeeper.session.timeout.ms=20000"});
  for (int id : {1, 2}) c.Start(id);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "own", "-c", "replication.factor=2"}), 0);
  json part;
  auto describe = [&](int via) {
    part = DescribePartition(c, via, "own");
    return Led(part);
  };
  REQUIRE(Eventually([&] { return describe(1) && part["isr"].size() == 2; }));
  const int leader = part["leader"].get<int>();
  const int follower = leader == 1 ? 2 : 1;
  auto produce = [&](const std::string& records, const std::string& acks,
                     std::vector<std::string> more = {}) {
    std::vector<std::string> args{
        Bin("rdmq-produce"), "-b", c.brokers.at(leader)->address(), "-a", acks, "-p", "0"};
    args.insert(args.end(), more.begin(), more.end());
    args.push_back("own");
    return Run(args, records, 120);
  };
  auto read = [&] { return ReadAll(c, leader, "own"); };

  const std::string a = Records("a", 0, 10);
  REQUIRE_RUN(produce(a, "all"), 0);
  CHECK(read() == Numbered(a, 0));

  // The follower stalls (SIGSTOP), still in the ISR: the leader commits the next records, but
  // acks=all answers only once the follower holds them, and no reader sees them before.
  c.brokers.at(follower)->Signal(SIGSTOP);
  const std::string b = Records("b", 10, 15);
  auto pending = std::async(std::launch::async, [&] { return produce(b, "all"); });
  CHECK(pending.wait_for(std::chrono::seconds(3)) == std::future_status::timeout);
  CHECK(read() == Numbered(a, 0));
  c.brokers.at(follower)->Signal(SIGCONT);
  REQUIRE(pending.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  REQUIRE_RUN(pending.get(), 0);
  CHECK(read() == Numbered(a + b, 0));

  // Fewer in sync than min.insync.replicas: refused (retried until delivery.timeout.ms), and
  // nothing of it is stored; acks=1 is still taken.
  REQUIRE_RUN(c.Rdmq(leader, {"topic", "alter", "own", "-c", "min.insync.replicas=3"}), 0);
  const RunResult refused = produce("x-0\n", "all", {"-X", "delivery.timeout.ms=3000"});
  CHECK(refused.code == 1);
  CHECK(Contains(refused.err, "NOT_ENOUGH_REPLICAS"));
  const std::string d = Records("d", 15, 20);
  REQUIRE_RUN(produce(d, "1"), 0);
  REQUIRE(Eventually([&] { return read() == Numbered(a + b + d, 0); }));

  // Enough in sync again, and under a shared lease too: with the follower stalled, the leader
  // commits the batch (its Commit answer carries the offsets) but acks=all answers only once
  // the follower holds it, when the broker writes the lease's ack block.
  REQUIRE_RUN(c.Rdmq(leader, {"topic", "alter", "own", "-c", "min.insync.replicas=2"}), 0);
  c.brokers.at(follower)->Signal(SIGSTOP);
  const std::string sh = Records("s", 20, 23);
  auto shared = std::async(std::launch::async, [&] {
    return produce(sh, "all", {"-X", "partition.mode=shared"});
  });
  CHECK(shared.wait_for(std::chrono::seconds(3)) == std::future_status::timeout);
  CHECK(read() == Numbered(a + b + d, 0));
  c.brokers.at(follower)->Signal(SIGCONT);
  REQUIRE(shared.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  REQUIRE_RUN(shared.get(), 0);
  const std::string e = Records("e", 23, 28);
  REQUIRE_RUN(produce(e, "all"), 0);
  const std::string all = Numbered(a + b + d + sh + e, 0);
  CHECK(read() == all);
  c.brokers.at(leader)->Kill();
  REQUIRE(Eventually([&] { return describe(follower) && part["leader"].get<int>() == follower; },
                     std::chrono::seconds(60)));
  const RunResult after = c.Kcat(follower, {"-C", "-t", "own", "-p", "0", "-e", "-q", "-f", "%o %s\n"});
  REQUIRE_RUN(after, 0);
  CHECK(after.out == all);
}

TEST_CASE(
    "reassignment: a partition's replicas move to other brokers with every record, the old ones drop theirs",
    "[e2e][cluster][replication][reassign]") {
  START_CLUSTER(c);
  for (int id : {1, 2, 3}) c.Start(id);
  json part = CreateReplicated(c, "mv");
  auto describe = [&](int via) {
    part = DescribePartition(c, via, "mv");
    return Led(part);
  };
  const int32_t epoch = part["leader_epoch"].get<int32_t>();
  const Roles roles = RolesOf(part, {1, 2, 3});
  const int leader = roles.leader, follower = roles.follower, spare = roles.spare;
  REQUIRE(follower != 0);
  REQUIRE(spare != 0);
  auto read = [&](int via) { return ReadAll(c, via, "mv"); };
  const std::string a = Records("a", 0, 100);
  REQUIRE_RUN(c.Kcat(leader, {"-P", "-t", "mv", "-p", "0", "-X", "acks=all"}, a), 0);

  // Refused, changing nothing: a broker twice, one that is not registered, another count, a
  // partition the topic lacks.
  const std::string s = std::to_string(spare), f = std::to_string(follower);
  auto reassign = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"partition", "reassign"});
    return c.Rdmq(1, args);
  };
  const RunResult twice = reassign({"mv", "0", "--replicas", s + "," + s});
  CHECK(twice.code == 1);
  CHECK(Contains(twice.err, "named twice"));
  const RunResult unknown = reassign({"mv", "0", "--replicas", s + ",9"});
  CHECK(unknown.code == 1);
  CHECK(Contains(unknown.err, "broker 9 is not registered"));
  const RunResult count = reassign({"mv", "0", "--replicas", s});
  CHECK(count.code == 1);
  CHECK(Contains(count.err, "has 2 replicas; 1 given"));
  const RunResult missing = reassign({"mv", "5", "--replicas", s + "," + f});
  CHECK(missing.code == 1);
  CHECK(Contains(missing.err, "no partition 5"));
  CHECK(reassign({"mv", "0"}).code == 2);
  REQUIRE(describe(1));
  CHECK(part["leader_epoch"].get<int32_t>() == epoch);
  CHECK(part["replicas"].size() == 2);

  // The leader's replica moves to the spare broker, which then leads: it is fed the log, joins
  // the ISR, and the move completes with every record at its offset.
  const RunResult moved = reassign({"mv", "0", "--replicas", s + "," + f, "--wait"});
  REQUIRE_RUN(moved, 0);
  CHECK(Contains(moved.out, "moved mv-0 to brokers"));
  REQUIRE(Eventually([&] { return describe(follower) && part["leader"].get<int>() == spare; }));
  CHECK(part["replicas"] == json::array({spare, follower}));
  CHECK(part["leader_epoch"].get<int32_t>() > epoch);
  CHECK(read(spare) == Numbered(a, 0));
  // The old leader holds no copy any more; the new one does.
  const std::string gone = c.brokers.at(leader)->data_dir() + "/topics/mv-0";
  CHECK(Eventually([&] { return !std::filesystem::exists(gone); }));
  CHECK(std::filesystem::exists(c.brokers.at(spare)->data_dir() + "/topics/mv-0"));
  // Written on: acks=all at the new leader, and its follower can take over with all of it.
  const std::string b = Records("b", 100, 120);
  REQUIRE_RUN(c.Kcat(spare, {"-P", "-t", "mv", "-p", "0", "-X", "acks=all"}, b), 0);
  CHECK(read(spare) == Numbered(a + b, 0));
  c.brokers.at(spare)->Kill();
  REQUIRE(Eventually([&] { return describe(follower) && part["leader"].get<int>() == follower; }));
  CHECK(read(follower) == Numbered(a + b, 0));
}

TEST_CASE("replication: rdmq's own consumer follows a partition to its new leader, at its position",
          "[e2e][cluster][replication]") {
  START_CLUSTER(c);
  for (int id : {1, 2}) c.Start(id);
  json part = CreateReplicated(c, "fol");
  const Roles roles = RolesOf(part, {1, 2});
  const int leader = roles.leader, follower = roles.follower;
  const std::string a = Records("a", 0, 50);
  REQUIRE_RUN(c.Kcat(leader, {"-P", "-t", "fol", "-p", "0", "-X", "acks=all"}, a), 0);

  // The consumer bootstraps through the leader, reads there, and keeps reading when the leader
  // dies: at the follower, from where it was, the records written there after the failover.
  const std::string address = c.brokers.at(leader)->address();
  auto consumed = std::async(std::launch::async, [&] {
    return Run({Bin("rdmq-consume"), "-b", address, "-c", "80", "-f", "%o %s\n", "fol"}, "", 120);
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  c.brokers.at(leader)->Kill();
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, follower, "fol");
    return Led(part) && part["leader"].get<int>() == follower;
  }));
  const std::string b = Records("b", 50, 80);
  REQUIRE_RUN(c.Kcat(follower, {"-P", "-t", "fol", "-p", "0", "-X", "acks=all"}, b), 0);
  REQUIRE(consumed.wait_for(std::chrono::seconds(90)) == std::future_status::ready);
  const RunResult r = consumed.get();
  REQUIRE_RUN(r, 0);
  CHECK(r.out == Numbered(a + b, 0));
}

// rdmq-produce with acks=all through broker `via`, writing "<tag>-0" .. "<tag>-<n-1>" to partition
// 0 of `topic` in chunks of 100 records every 100 ms, so that a change of leader lands among
// them. Exit status 0: every record was acknowledged.
std::future<RunResult> ProduceSlowly(Cluster& c, int via, const std::string& topic, const std::string& tag,
                                     int n) {
  const std::string command = "for i in $(seq 0 " + std::to_string(n / 100 - 1) + "); do seq -f '" + tag +
                              "-%g' $((i*100)) $((i*100+99)); sleep 0.1; done | rdmq-produce -b " +
                              c.brokers.at(via)->address() + " -a all -p 0 " + topic;
  return std::async(std::launch::async, [command] { return Shell(command, 150); });
}

TEST_CASE("replication: rdmq's own producer follows a killed leader with the batches it holds",
          "[e2e][cluster][replication]") {
  START_CLUSTER(c);
  for (int id : {1, 2}) c.Start(id);
  json part = CreateReplicated(c, "pf");
  const Roles roles = RolesOf(part, {1, 2});
  const int leader = roles.leader, follower = roles.follower;

  // The producer bootstraps through the leader, which is killed while it writes: the records
  // it holds (queued, or written and not acknowledged) go to the follower once that leads.
  constexpr int kRecords = 3000;
  auto produced = ProduceSlowly(c, leader, "pf", "k", kRecords);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  REQUIRE(produced.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);  // still writing
  c.brokers.at(leader)->Kill();
  REQUIRE(produced.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
  const RunResult r = produced.get();
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.err, "following a partition to its new leader partition=pf-0"));  // it moved
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, follower, "pf");
    return Led(part) && part["leader"].get<int>() == follower;
  }));
  // Every record once, in the order written (idempotence: what the follower already had from
  // the old leader is not stored again).
  CHECK(ReadAll(c, follower, "pf") == Numbered(Records("k", 0, kRecords), 0));
}

TEST_CASE("replication: rdmq's own producer follows a partition reassigned away from a live leader",
          "[e2e][cluster][replication][reassign]") {
  START_CLUSTER(c);
  for (int id : {1, 2, 3}) c.Start(id);
  json part = CreateReplicated(c, "pr");
  const Roles roles = RolesOf(part, {1, 2, 3});
  const int leader = roles.leader, follower = roles.follower, spare = roles.spare;
  REQUIRE(follower != 0);
  REQUIRE(spare != 0);

  // The old leader stays up and answers NOT_LEADER once the move completes; the producer's
  // batches follow the partition to the spare broker.
  constexpr int kRecords = 3000;
  auto produced = ProduceSlowly(c, leader, "pr", "m", kRecords);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  REQUIRE(produced.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  REQUIRE_RUN(c.Rdmq(1, {"partition", "reassign", "pr", "0", "--replicas",
                         std::to_string(spare) + "," + std::to_string(follower), "--wait"}),
              0);
  REQUIRE(produced.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
  const RunResult r = produced.get();
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.err, "following a partition to its new leader partition=pr-0"));
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, follower, "pr");
    return Led(part) && part["leader"].get<int>() == spare;
  }));
  CHECK(ReadAll(c, spare, "pr") == Numbered(Records("m", 0, kRecords), 0));

  // A producer idle on the partition when it moves (nothing to hand over but its sequences):
  // it writes, waits until the move back to the first leader completed, and writes again; the
  // records after the move are stored too (numbered afresh, the new leader would have taken
  // them for ones it holds and dropped them).
  TempDir tmp("rdmq-idle-move");
  const std::string go = tmp.str() + "/go";
  auto idle = std::async(std::launch::async, [&] {
    return Shell("{ seq -f 'i-%g' 0 9; while [ ! -e " + go +
                     " ]; do sleep 0.05; done; seq -f 'i-%g' 10 19; } | " + "rdmq-produce -a all -p 0 -b " +
                     c.brokers.at(spare)->address() + " pr",
                 120);
  });
  const std::string before = Numbered(Records("m", 0, kRecords) + Records("i", 0, 10), 0);
  REQUIRE(Eventually([&] { return ReadAll(c, spare, "pr") == before; }));
  REQUIRE_RUN(c.Rdmq(1, {"partition", "reassign", "pr", "0", "--replicas",
                         std::to_string(leader) + "," + std::to_string(follower), "--wait"}),
              0);
  REQUIRE(Eventually([&] {
    part = DescribePartition(c, follower, "pr");
    return Led(part) && part["leader"].get<int>() == leader;
  }));
  // Idle past a third of lease.ms (10 s): the producer renews its lease, learns it is over, and
  // the next record's Send is the first to hear NOT_LEADER, with nothing queued to hand over.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  { std::ofstream(go).put('\n'); }
  REQUIRE(idle.wait_for(std::chrono::seconds(90)) == std::future_status::ready);
  REQUIRE_RUN(idle.get(), 0);
  CHECK(ReadAll(c, leader, "pr") == Numbered(Records("m", 0, kRecords) + Records("i", 0, 20), 0));
}

TEST_CASE("replication: a follower whose log ends below the leader's log start starts over there and rejoins",
          "[e2e][cluster][replication]") {
  RDMQ_START_ZOOKEEPER(zk);
  Cluster c(zk, {"--set", "log.retention.check.interval.ms=100"});
  for (int id : {1, 2}) c.Start(id);
  // Small segments, and retention that keeps about two of them.
  json part =
      CreateReplicated(c, "ls", {"segment.bytes=65536", "max.message.bytes=16384", "retention.bytes=131072"});
  auto describe = [&](int via) {
    part = DescribePartition(c, via, "ls");
    return Led(part);
  };
  const Roles roles = RolesOf(part, {1, 2});
  const int leader = roles.leader, follower = roles.follower;
  const std::string a = Records("a", 0, 100);
  REQUIRE_RUN(c.Kcat(leader, {"-P", "-t", "ls", "-p", "0", "-X", "acks=all"}, a), 0);

  // The follower is away while the leader writes about 1 MiB: retention deletes the segments
  // that held what the follower lacks.
  c.brokers.at(follower)->Kill();
  REQUIRE(Eventually([&] { return describe(leader) && part["isr"].size() == 1; }));
  std::string b;
  const std::string pad(400, 'x');
  for (int i = 100; i < 2600; ++i) b += "b-" + std::to_string(i) + "-" + pad + "\n";
  REQUIRE_RUN(c.Kcat(leader, {"-P", "-t", "ls", "-p", "0", "-X", "acks=1", "-X", "batch.size=8000"}, b), 0);
  REQUIRE(Eventually([&] { return describe(leader) && part["log_start_offset"].get<int64_t>() > 100; }));
  const std::string kept = ReadAll(c, leader, "ls");
  REQUIRE(std::stoll(kept) >= part["log_start_offset"].get<int64_t>());  // the first offset read
  REQUIRE(Contains(kept.substr(0, kept.find('\n')), " b-"));

  // Back: its log ends at 100, below the leader's log start. It starts over there, is fed the
  // rest and rejoins the ISR; it can then take over with exactly what the leader holds.
  c.Start(follower);
  REQUIRE(Eventually([&] { return describe(leader) && part["isr"].size() == 2; }, std::chrono::seconds(60)));
  CHECK(Contains(c.brokers.at(follower)->Log(), "replica started over at its leader's log start"));
  c.brokers.at(leader)->Kill();
  REQUIRE(Eventually([&] { return describe(follower) && part["leader"].get<int>() == follower; }));
  // Retention may have moved the log start on since: what it holds is the end of what was kept,
  // up to the last record, every record at its offset.
  const std::string got = ReadAll(c, follower, "ls");
  CHECK(Contains(got, "\n2599 b-2599-"));
  REQUIRE(got.size() <= kept.size());
  CHECK(kept.compare(kept.size() - got.size(), got.size(), got) == 0);
}

}  // namespace
}  // namespace rdmq::test
