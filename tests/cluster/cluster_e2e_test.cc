// Three rdmq-broker processes in a cluster on a ZooKeeper the test starts (tcp fabric, loopback):
// topics spread over the brokers; `rdmq cluster status` and `topic describe` from any broker show
// every broker, the controller and every partition's leader; kcat (librdkafka) produces and
// consumes through any broker, each request reaching the partition's leader; rdmq's own producer
// does too (by partition and by key), and its consumer reads each partition from its leader; a
// killed broker's partitions have no leader until it returns with its data; deleting a topic removes it from
// every broker's disk; a consumer group has one coordinator whichever broker its members
// bootstrap from; settings that cannot work are refused.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli/cli_fixture.h"
#include "cluster/cluster_fixture.h"
#include "rdmq/client/connection.h"
#include "rdmq/producer/partitioner.h"
#include "rdmq/protocol/group_messages.h"
#include "support/zookeeper_server.h"

namespace rdmq::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST_CASE("cluster of three: topics spread, any broker answers, kcat reaches every leader, a broker returns",
          "[e2e][cluster]") {
  START_CLUSTER(c);
  for (int id : {1, 2, 3}) c.Start(id);

  json status = c.Json(1, {"cluster", "status"});
  CHECK(status["clustered"] == true);
  CHECK(status["brokers"].size() == 3);
  CHECK(status["controller"].get<int>() >= 1);
  REQUIRE_RUN(c.Rdmq(2, {"topic", "create", "orders", "--partitions", "6"}), 0);

  // Any broker describes the whole topic: each broker leads two partitions.
  json d = c.Json(3, {"topic", "describe", "orders"});
  REQUIRE(d["partitions"].size() == 6);
  std::map<int, int> leaders;
  std::map<int, int> leader_of;  // partition -> broker
  for (const auto& p : d["partitions"]) {
    ++leaders[p["leader"].get<int>()];
    leader_of[p["partition"].get<int>()] = p["leader"].get<int>();
    CHECK(p["replicas"].size() == 1);
    CHECK(p["isr"] == p["replicas"]);
    CHECK(p["local"] == (p["leader"].get<int>() == 3));
  }
  CHECK(leaders == std::map<int, int>{{1, 2}, {2, 2}, {3, 2}});

  // kcat sees three brokers and produces through broker 1 to every partition's leader.
  const RunResult meta = c.Kcat(1, {"-L"});
  REQUIRE_RUN(meta, 0);
  CHECK(Contains(meta.out, "3 brokers"));
  std::string lines;
  for (int i = 0; i < 3000; ++i) lines += "k" + std::to_string(i % 30) + ":" + std::to_string(i) + "\n";
  REQUIRE_RUN(c.Kcat(1, {"-P", "-t", "orders", "-K", ":"}, lines), 0);
  const RunResult read = c.Kcat(3, {"-C", "-t", "orders", "-e", "-q", "-f", "%p %k %s\n"});
  REQUIRE_RUN(read, 0);
  std::map<std::string, int> last;  // per key: values come in order
  std::set<int> partitions_used;
  size_t n = 0;
  std::istringstream in(read.out);
  for (std::string p, k, v; in >> p >> k >> v; ++n) {
    partitions_used.insert(std::stoi(p));
    const int value = std::stoi(v);
    CHECK(value > (last.count(k) ? last[k] : -1));
    last[k] = value;
  }
  CHECK(n == 3000);
  CHECK(partitions_used.size() >= 4);  // 30 keys over 6 partitions
  // Each leader stamped its leader epoch on every batch it took (kcat's included).
  for (const auto& p : d["partitions"]) {
    const int leader = p["leader"].get<int>();
    const std::string index = std::to_string(p["partition"].get<int>());
    const RunResult inspect = Run({Bin("rdmq"), "partition", "inspect", "--data-dir",
                                   c.brokers.at(leader)->data_dir(), "orders", index, "--json"});
    REQUIRE_RUN(inspect, 0);
    const json dump = ParseJson(inspect);
    size_t batches = 0;
    for (const auto& seg : dump["segments"]) {
      for (const auto& b : seg["batches"]) {
        CHECK(b["leader_epoch"] == p["leader_epoch"]);
        ++batches;
      }
    }
    if (partitions_used.count(p["partition"].get<int>()) != 0) CHECK(batches > 0);
  }

  // rdmq's own producer, bootstrapped at any broker, reaches every partition's leader: to a
  // partition it names, and by key (Kafka's murmur2; kcat's own default is a CRC32 hash).
  const int p0 = leader_of[0];
  const int other = p0 == 1 ? 2 : 1;
  REQUIRE_RUN(
      Run({Bin("rdmq-produce"), "-b", c.brokers.at(other)->address(), "-p", "0", "orders"}, "rdmq\n", 60), 0);
  std::string keyed;
  for (int i = 0; i < 600; ++i) keyed += "k" + std::to_string(i % 30) + ":r" + std::to_string(i) + "\n";
  const RunResult routed =
      Run({Bin("rdmq-produce"), "-b", c.brokers.at(other)->address(), "-K", ":", "-v", "orders"}, keyed, 60);
  REQUIRE_RUN(routed, 0);
  const RunResult after = c.Kcat(2, {"-C", "-t", "orders", "-e", "-q", "-f", "%p %k %s\n"});
  REQUIRE_RUN(after, 0);
  size_t rdmq_records = 0;
  std::set<int> rdmq_partitions;
  std::istringstream after_in(after.out);
  for (std::string line; std::getline(after_in, line);) {
    std::istringstream f(line);
    std::string p, k, v;
    f >> p >> k >> v;
    if (v.empty() && k == "rdmq") {  // the unkeyed record ("%k" prints nothing)
      CHECK(p == "0");
      continue;
    }
    if (v.empty() || v[0] != 'r') continue;  // kcat's own records
    ++rdmq_records;
    rdmq_partitions.insert(std::stoi(p));
    CHECK(std::stoi(p) == producer::PartitionForKey(k, 6));
  }
  CHECK(rdmq_records == 600);
  CHECK(rdmq_partitions.size() >= 4);
  // rdmq's own consumer, bootstrapped at the leader of partition 0, reads every partition from
  // its leader, to each log's end: all that kcat and rdmq-produce wrote.
  const RunResult all =
      Run({Bin("rdmq-consume"), "-b", c.brokers.at(p0)->address(), "-e", "-f", "%p %s\n", "orders"}, "", 120);
  REQUIRE_RUN(all, 0);
  std::map<int, size_t> per_partition;
  std::istringstream all_in(all.out);
  for (std::string p, v; all_in >> p >> v;) ++per_partition[std::stoi(p)];
  CHECK(per_partition.size() == 6);
  size_t total = 0;
  for (const auto& [p, count] : per_partition) total += count;
  CHECK(total == 3601);
  // A group's consumer too: the group is coordinated by one broker of the cluster (the test
  // below), its partitions read at their leaders.
  const RunResult grouped = Run({Bin("rdmq-consume"), "-b", c.brokers.at(p0)->address(), "-g", "readers",
                                 "-e", "-f", "%p %s\n", "orders"},
                                "", 120);
  REQUIRE_RUN(grouped, 0);
  CHECK(std::count(grouped.out.begin(), grouped.out.end(), '\n') == 3601);
  const RunResult one =
      Run({Bin("rdmq-consume"), "-b", c.brokers.at(other)->address(), "-p", "0", "-e", "orders"}, "", 60);
  REQUIRE_RUN(one, 0);
  CHECK(Contains(one.out, "rdmq\n"));

  // A broker dies: its partitions have no leader (replication.factor 1) until it returns, with
  // its data.
  const int victim = leader_of[1];
  const int survivor = victim == 1 ? 2 : 1;
  c.brokers.at(victim)->Kill();
  REQUIRE(Eventually([&] {
    json s = c.Json(survivor, {"cluster", "status"});
    return s["brokers"].size() == 2 && s["offline_partitions"] == 2;
  }));
  // rdmq's clients, new to the victim, say that its partition's broker is gone (the producer
  // after waiting max.block.ms for it, or a new leader, to be reachable).
  const RunResult no_leader = Run({Bin("rdmq-produce"), "-b", c.brokers.at(survivor)->address(), "-p", "1",
                                   "-X", "max.block.ms=1500", "orders"},
                                  "x\n", 60);
  CHECK(no_leader.code == 1);
  CHECK(Contains(no_leader.err, "broker " + std::to_string(victim) + " is not live in the cluster"));
  const RunResult no_read =
      Run({Bin("rdmq-consume"), "-b", c.brokers.at(survivor)->address(), "-p", "1", "-e", "orders"}, "", 60);
  CHECK(no_read.code == 1);
  CHECK(Contains(no_read.err, "broker " + std::to_string(victim) + " is not live in the cluster"));
  // Keyless records go to the partitions that have a leader.
  REQUIRE_RUN(Run({Bin("rdmq-produce"), "-b", c.brokers.at(survivor)->address(), "orders"}, "a\nb\nc\n", 60),
              0);
  c.Start(victim);
  REQUIRE(Eventually([&] { return c.Json(survivor, {"cluster", "status"})["offline_partitions"] == 0; }));
  const RunResult again = c.Kcat(survivor, {"-C", "-t", "orders", "-e", "-q"});
  REQUIRE_RUN(again, 0);
  CHECK(std::count(again.out.begin(), again.out.end(), '\n') == 3604);
  d = c.Json(survivor, {"topic", "describe", "orders"});
  for (const auto& p : d["partitions"]) {
    if (p["leader"] == victim) CHECK(p["leader_epoch"].get<int>() >= 1);  // elected again
  }

  // Deleting the topic removes it from every broker's disk.
  REQUIRE_RUN(c.Rdmq(3, {"topic", "delete", "orders"}), 0);
  REQUIRE(Eventually([&] {
    for (const auto& [id, b] : c.brokers) {
      if (!std::filesystem::is_empty(b->data_dir() + "/topics")) return false;
    }
    return true;
  }));
  CHECK(c.Json(1, {"topic", "list"})["topics"].empty());
}

// An RPC connection (no data endpoint) to broker `via`.
std::unique_ptr<client::Connection> Control(Cluster& c, int via) {
  client::ClientOptions o;
  o.bootstrap = c.brokers.at(via)->address();
  client::ConnectionOptions co;
  co.data_endpoint = false;
  auto conn = client::Connection::Open(o, co);
  REQUIRE(conn.ok());
  return std::move(*conn);
}

// FindCoordinator through `via`: the broker that coordinates `group`.
int CoordinatorVia(Cluster& c, int via, const std::string& group) {
  auto found = Control(c, via)->Call<protocol::FindCoordinatorResponse>(protocol::Api::kFindCoordinator,
                                                                        protocol::GroupRequest{group});
  REQUIRE(found.ok());
  CHECK(found->control.empty() == (found->broker == via));
  return found->broker;
}

TEST_CASE("cluster: a group has one coordinator whichever broker its members bootstrap from",
          "[e2e][cluster]") {
  START_CLUSTER(c);
  for (int id : {1, 2, 3}) c.Start(id);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "jobs", "--partitions", "6"}), 0);
  std::string lines;
  for (int i = 0; i < 600; ++i) lines += "j" + std::to_string(i) + "\n";
  REQUIRE_RUN(Run({Bin("rdmq-produce"), "-b", c.brokers.at(1)->address(), "jobs"}, lines, 60), 0);

  // Every broker names the same coordinator.
  const int coordinator = CoordinatorVia(c, 1, "workers");
  REQUIRE(coordinator >= 1);
  CHECK(CoordinatorVia(c, 2, "workers") == coordinator);
  CHECK(CoordinatorVia(c, 3, "workers") == coordinator);
  const int elsewhere = coordinator == 1 ? 2 : 1;
  const int third = 6 - coordinator - elsewhere;

  // Another broker refuses the group's requests, naming the coordinator.
  {
    protocol::GroupHeartbeatRequest join;
    join.group = "workers";
    join.topics = {"jobs"};
    join.session_timeout_ms = 10000;
    join.rebalance_timeout_ms = 10000;
    auto refused =
        Control(c, elsewhere)->Call<protocol::GroupHeartbeatResponse>(protocol::Api::kGroupHeartbeat, join);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().is(protocol::WireError::kNotCoordinator));
    CHECK(Contains(refused.status().ToString(), "coordinated by broker " + std::to_string(coordinator)));
  }

  // A member bootstrapped at a broker that does not coordinate the group reads everything and
  // commits at the coordinator ...
  const RunResult first = Run({Bin("rdmq-consume"), "-b", c.brokers.at(elsewhere)->address(), "-g", "workers",
                               "--commit", "-e", "jobs"},
                              "", 120);
  REQUIRE_RUN(first, 0);
  CHECK(std::count(first.out.begin(), first.out.end(), '\n') == 600);
  // ... so a member bootstrapped at a third broker resumes from those commits: nothing is left.
  const RunResult second = Run(
      {Bin("rdmq-consume"), "-b", c.brokers.at(third)->address(), "-g", "workers", "--commit", "-e", "jobs"},
      "", 120);
  REQUIRE_RUN(second, 0);
  CHECK(second.out.empty());
  // The group's offsets, described and listed through any broker, are the coordinator's.
  const auto committed_via = [&](int via, const std::string& group = "workers") {
    const json d = c.Json(via, {"group", "describe", group});
    int64_t committed = 0;
    for (const auto& p : d["partitions"]) {
      if (!p["committed_offset"].is_null()) committed += p["committed_offset"].get<int64_t>();
    }
    return committed;
  };
  for (int via : {1, 2, 3}) {
    INFO("via broker " << via);
    CHECK(committed_via(via) == 600);
    const json list = c.Json(via, {"group", "list"});
    REQUIRE(list["groups"].size() == 1);
    CHECK(list["groups"][0]["group"] == "workers");
  }

  // A Kafka consumer group (kcat, librdkafka) that the same broker coordinates commits there too.
  std::string kafka_group;
  for (int i = 0; kafka_group.empty() && i < 64; ++i) {
    const std::string g = "kafka-" + std::to_string(i);
    if (CoordinatorVia(c, 1, g) == coordinator) kafka_group = g;
  }
  REQUIRE_FALSE(kafka_group.empty());
  const RunResult kread = c.Kcat(
      elsewhere, {"-G", kafka_group, "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "jobs"});
  REQUIRE_RUN(kread, 0);
  CHECK(std::count(kread.out.begin(), kread.out.end(), '\n') == 600);
  CHECK(committed_via(third, kafka_group) == 600);

  // The coordinator dies: another broker coordinates the groups, with every committed offset (the
  // cluster keeps them in ZooKeeper, not on the coordinator's disk).
  c.brokers.at(coordinator)->Kill();
  REQUIRE(Eventually([&] { return CoordinatorVia(c, elsewhere, "workers") != coordinator; }));
  // (Each broker picks from its own view of the live brokers: they agree once both saw it go.)
  CHECK(Eventually(
      [&] { return CoordinatorVia(c, third, "workers") == CoordinatorVia(c, elsewhere, "workers"); }));
  CHECK(committed_via(elsewhere) == 600);
  CHECK(committed_via(third, kafka_group) == 600);
  // It returns and coordinates the group again; a member resumes from the commits and reads only
  // what was written since.
  c.Start(coordinator);
  REQUIRE(Eventually([&] { return CoordinatorVia(c, elsewhere, "workers") == coordinator; }));
  REQUIRE(Eventually([&] { return c.Json(third, {"cluster", "status"})["offline_partitions"] == 0; }));
  REQUIRE_RUN(Run({Bin("rdmq-produce"), "-b", c.brokers.at(third)->address(), "jobs"}, "n1\nn2\nn3\n", 60),
              0);
  const RunResult resumed = Run(
      {Bin("rdmq-consume"), "-b", c.brokers.at(third)->address(), "-g", "workers", "--commit", "-e", "jobs"},
      "", 120);
  REQUIRE_RUN(resumed, 0);
  std::vector<std::string> got;
  std::istringstream resumed_in(resumed.out);
  for (std::string line; std::getline(resumed_in, line);) got.push_back(line);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(committed_via(coordinator) == 603);
  // kcat resumes from its group's commits as well (a partition that had no records has no commit:
  // it starts at the earliest record).
  const RunResult kresumed = c.Kcat(
      third, {"-G", kafka_group, "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "jobs"});
  REQUIRE_RUN(kresumed, 0);
  CHECK(std::count(kresumed.out.begin(), kresumed.out.end(), '\n') == 3);
  REQUIRE_RUN(c.Rdmq(third, {"group", "delete", "workers"}), 0);
  REQUIRE_RUN(c.Rdmq(third, {"group", "delete", kafka_group}), 0);
  CHECK(c.Json(elsewhere, {"group", "list"})["groups"].empty());
}

// kcat's SASL/SCRAM login as `user` (password "<user>-secret").
std::vector<std::string> As(const std::string& user, std::vector<std::string> args) {
  args.insert(args.end(), {"-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=SCRAM-SHA-256",
                           "-X", "sasl.username=" + user, "-X", "sasl.password=" + user + "-secret"});
  return args;
}

TEST_CASE("cluster: users and ACLs made through one broker hold at every broker", "[e2e][cluster]") {
  RDMQ_START_ZOOKEEPER(zk);
  Cluster c(zk, {"--set", "kafka.security.protocol=SASL_PLAINTEXT", "--set",
                 "sasl.enabled.mechanisms=SCRAM-SHA-256", "--set", "authorizer.enabled=true", "--set",
                 "super.users=User:ANONYMOUS"});
  for (int id : {1, 2, 3}) c.Start(id);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "orders", "--partitions", "3"}), 0);
  REQUIRE_RUN(c.Rdmq(1, {"user", "add", "alice", "--mechanism", "SCRAM-SHA-256", "--password-file", "-"},
                     "alice-secret\n"),
              0);
  // Made through broker 1: every broker lists alice, and refuses a second one.
  for (int via : {1, 2, 3}) {
    INFO("via broker " << via);
    CHECK(Eventually([&] { return c.Json(via, {"user", "list"})["users"].size() == 1; }));
  }
  const RunResult twice = c.Rdmq(3, {"user", "add", "alice", "--password-file", "-"}, "other\n");
  CHECK(twice.code != 0);
  CHECK(Contains(twice.err, "exists"));

  // An ACL added through broker 2 lets alice write at every partition's leader (kcat through
  // broker 3 reaches all three); without Read she may not consume.
  REQUIRE_RUN(
      c.Rdmq(2, {"acl", "add", "--principal", "User:alice", "--operation", "write", "--topic", "orders"}), 0);
  for (int via : {1, 2, 3}) {
    INFO("via broker " << via);
    CHECK(Eventually([&] { return c.Json(via, {"acl", "list"})["acls"].size() == 1; }));
  }
  std::string lines;
  for (int i = 0; i < 30; ++i) lines += "o" + std::to_string(i) + "\n";
  REQUIRE_RUN(c.Kcat(3, As("alice", {"-P", "-t", "orders"}), lines), 0);
  const RunResult no_read = c.Kcat(1, As("alice", {"-C", "-t", "orders", "-e", "-c", "1"}));
  CHECK(Contains(no_read.out + no_read.err, "uthorization failed"));
  REQUIRE_RUN(
      c.Rdmq(3, {"acl", "add", "--principal", "User:alice", "--operation", "read", "--topic", "orders"}), 0);
  CHECK(Eventually([&] { return c.Json(1, {"acl", "list"})["acls"].size() == 2; }));
  CHECK(Eventually([&] { return c.Json(2, {"acl", "list"})["acls"].size() == 2; }));
  const RunResult read = c.Kcat(1, As("alice", {"-C", "-t", "orders", "-e", "-q"}));
  REQUIRE_RUN(read, 0);
  CHECK(std::count(read.out.begin(), read.out.end(), '\n') == 30);

  // A restarted broker has them from the cluster; deleted through broker 2, alice is gone
  // everywhere.
  c.brokers.at(1)->Kill();
  c.Start(1);
  CHECK(c.Json(1, {"user", "list"})["users"].size() == 1);
  CHECK(c.Json(1, {"acl", "list"})["acls"].size() == 2);
  REQUIRE_RUN(c.Rdmq(2, {"user", "delete", "alice"}), 0);
  for (int via : {1, 2, 3}) {
    INFO("via broker " << via);
    CHECK(Eventually([&] { return c.Json(via, {"user", "list"})["users"].empty(); }));
  }
  const RunResult gone = c.Kcat(3, As("alice", {"-L"}));
  CHECK(gone.code != 0);
}

TEST_CASE("cluster: settings that cannot work are refused with the reason", "[e2e][cluster]") {
  START_CLUSTER(c);
  c.Start(1);
  // More replicas than live brokers: refused, naming why.
  RunResult r = c.Rdmq(1, {"topic", "create", "rep", "-c", "replication.factor=2"});
  CHECK(r.code == 1);
  INFO(r.err);
  CHECK(Contains(r.err, "NOT_ENOUGH_REPLICAS"));
  // A second broker with the same id is refused at start.
  auto twin = c.Make(1, "twin");
  std::string error;
  CHECK_FALSE(twin->Start(&error));
  CHECK(Contains(twin->Log(), "broker.id 1 is registered in ZooKeeper by a live broker"));
  // No ZooKeeper to reach: a clear error, not a hang.
  BrokerProcess lost(c.tmp.str() + "/lost", {"--set", "fabric=tcp", "--set", "listen.control=127.0.0.1:0",
                                             "--set", "listen.data=127.0.0.1:0", "--set", "broker.id=7",
                                             "--set", "cluster.zookeeper.connect=127.0.0.1:1"});
  CHECK_FALSE(lost.Start(&error));
  CHECK(Contains(lost.Log(), "cluster.zookeeper.connect=127.0.0.1:1"));
  // A broker on its own refuses a replication factor it cannot hold.
  Fixture alone;
  r = alone.Rdmq({"topic", "create", "rep", "-c", "replication.factor=3"});
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "a broker on its own holds one replica"));
}

}  // namespace
}  // namespace rdmq::test
