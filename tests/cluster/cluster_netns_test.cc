// Multi-node tests on a real network: each rdmq-broker in a network namespace of its own, joined
// to the test's ZooKeeper by veth pairs and a bridge (support/netns.h), so that a broker can be cut
// off by taking its link down. Each is judged by a Jepsen-style history (support/history.h): every
// record acknowledged, with its offset, and every record read.
//
// With one replica per partition they show the fencing a replicated cluster stands on: a leader
// cut off from ZooKeeper stops acknowledging and serving reads on its own, before the cluster
// could elect anyone else (tested with a client inside the cut-off broker's namespace, which
// still reaches it), serves again when its link returns, and nothing it acknowledged is lost; a
// leader killed with SIGKILL mid-write, brokers restarted one by one, and ZooKeeper restarted,
// lose nothing acknowledged. With three replicas, written by a Kafka client with acks=all
// (acks_all_producer.py): a leader killed is replaced by a follower in the ISR, the killed broker
// returns, catches up and rejoins, and after a second leader dies nothing acknowledged is lost;
// rdmq's own producer (acks=all) writing through a leader that is killed follows the partition
// with its batches, every record acknowledged and none lost; a
// leader cut off acknowledges nothing more to a client beside it, a follower takes over, and the
// old leader returns as a follower; every broker restarted in turn, and ZooKeeper restarted,
// lose nothing acknowledged.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/cli_fixture.h"
#include "support/history.h"
#include "support/netns.h"
#include "support/zookeeper_server.h"

namespace rdmq::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Waits until `ok` holds (every 200 ms, up to `limit`).
bool Eventually(const std::function<bool()>& ok, std::chrono::seconds limit = 40s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    std::this_thread::sleep_for(200ms);
  }
  return ok();
}

struct NetCluster {
  NetLab lab;
  TempDir tmp{"rdmq-netns"};
  std::unique_ptr<ZooKeeperServer> zk;
  std::map<int, std::unique_ptr<BrokerProcess>> brokers;  // broker id i+1 on host i
  History history;
  std::string last_describe;    // what the last LeaderOf read, for failures
  std::string last_read_error;  // the last ReadAll's exit and standard error
  int written = 0;              // values w-1 .. w-<written> were sent

  // The lab, ZooKeeper on the bridge and `n` brokers; a failure fails the test with the reason.
  void Up(int n) {
    std::string error;
    const bool up = lab.Up(n, &error);
    INFO(error);
    REQUIRE(up);
    zk = std::make_unique<ZooKeeperServer>(lab.gateway());
    REQUIRE(zk->Start(&error));
    for (int i = 0; i < n; ++i) {
      const std::string a = lab.address(i);
      auto b = std::make_unique<BrokerProcess>(
          tmp.str() + "/broker" + std::to_string(i + 1),
          std::vector<std::string>{"--set", "fabric=tcp", "--set", "listen.control=" + a + ":0", "--set",
                                   "listen.data=" + a + ":0", "--set", "listen.kafka=" + a + ":0", "--set",
                                   "security.allow.anonymous=true", "--set",
                                   "broker.id=" + std::to_string(i + 1), "--set",
                                   "cluster.zookeeper.connect=" + zk->connect(), "--set",
                                   "cluster.zookeeper.session.timeout.ms=2000"});
      b->RunIn(lab.Prefix(i));
      REQUIRE(b->Start(&error));
      brokers[i + 1] = std::move(b);
    }
  }
  int host_of(int broker) const { return broker - 1; }
  BrokerProcess& broker(int id) { return *brokers.at(id); }

  RunResult Rdmq(int via, std::vector<std::string> args) {
    args.insert(args.begin(), {Bin("rdmq"), "--broker", broker(via).address()});
    return Run(args, "", 60);
  }
  int LeaderOf(int via, const std::string& topic, int partition) {
    const RunResult r = Rdmq(via, {"topic", "describe", topic, "--json"});
    last_describe = "exit " + std::to_string(r.code) + "\n" + r.out + r.err;
    if (r.code != 0) return -1;
    const json d = json::parse(r.out);
    for (const auto& p : d["partitions"]) {
      if (p["partition"] == partition) return p["leader"].get<int>();
    }
    return -1;
  }

  // Each partition's leader once every one of the topic's `partitions` has one (asked of broker 1);
  // fails the test after 40 s without.
  std::map<int, int> Leaders(const std::string& topic, int partitions) {
    std::map<int, int> leader_of;
    const bool all = Eventually([&] {
      for (int p = 0; p < partitions; ++p) {
        if ((leader_of[p] = LeaderOf(1, topic, p)) <= 0) return false;
      }
      return true;
    });
    if (!all)
      FAIL("not every partition of " << topic << " got a leader; the last answer:\n" << last_describe);
    return leader_of;
  }

  // Reads each partition in `leader_of` whole, from its leader's host, as the final logs, and
  // judges the history.
  History::Verdict Judge(const std::string& topic, const std::map<int, int>& leader_of) {
    for (const auto& [p, leader] : leader_of) {
      auto final = ReadAll(host_of(leader), leader, topic, p);
      INFO("reading " << topic << "-" << p << " from broker " << leader << ": " << last_read_error);
      REQUIRE(final.has_value());
      history.Final(p, *final);
    }
    return history.Check();
  }

  // rdmq-produce -v's "line N: partition P offset O" lines, for records "w-<first>".. in input
  // order, into the history. Returns how many were acknowledged.
  int Acknowledged(const std::string& verbose_out, int first) {
    int acked = 0;
    std::istringstream out(verbose_out);
    std::string line;
    while (std::getline(out, line)) {
      int n_line = 0, p = 0;
      long long offset = 0;
      if (std::sscanf(line.c_str(), "line %d: partition %d offset %lld", &n_line, &p, &offset) == 3) {
        history.Acknowledged(p, offset, "w-" + std::to_string(first + n_line - 1));
        ++acked;
      }
    }
    return acked;
  }

  // One round of `n` records to `partition` by rdmq-produce on host `from` through broker `via`;
  // the acknowledged ones go into the history. Returns how many were acknowledged.
  int ProduceRound(int from, int via, const std::string& topic, int partition, int n,
                   std::string* err = nullptr) {
    std::string input;
    const int first = written + 1;
    for (int i = 0; i < n; ++i) input += "w-" + std::to_string(++written) + "\n";
    std::vector<std::string> argv = lab.Prefix(from);
    argv.insert(argv.end(), {Bin("rdmq-produce"), "-v", "-b", broker(via).address(), "-p",
                             std::to_string(partition), "-X", "delivery.timeout.ms=4000", "-X",
                             "request.timeout.ms=2000", "-X", "max.block.ms=4000", topic});
    const RunResult r = Run(argv, input, 60);
    if (err != nullptr) *err = r.err;
    return Acknowledged(r.out, first);
  }

  // `n` records to `partition` by one rdmq-produce process with acks=all on host `from` through
  // broker `via`, fed in 20 parts 100 ms apart (so that a failover lands among them); the
  // acknowledged ones go into the history. Returns how many were acknowledged.
  int ProduceStream(int from, int via, const std::string& topic, int partition, int n, std::string* err) {
    const int first = written + 1;
    written += n;
    const int step = (n + 19) / 20;
    std::string feed = "for i in $(seq 0 19); do seq -f 'w-%g' $((" + std::to_string(first) + "+i*" +
                       std::to_string(step) + ")) $((" + std::to_string(first) + "+i*" +
                       std::to_string(step) + "+" + std::to_string(step - 1) +
                       ")); sleep 0.1; done | head -n " + std::to_string(n);
    std::vector<std::string> argv = lab.Prefix(from);
    argv.insert(argv.end(),
                {"/bin/sh", "-c",
                 feed + " | " + Bin("rdmq-produce") + " -v -a all -b " + broker(via).address() + " -p " +
                     std::to_string(partition) + " -X delivery.timeout.ms=60000 " + topic});
    const RunResult r = Run(argv, "", 120);
    if (err != nullptr) *err = "exit " + std::to_string(r.code) + ": " + r.err;
    return Acknowledged(r.out, first);
  }

  // One round of `n` records to `partition` by a Kafka client (tests/cluster/acks_all_producer.py:
  // python3-confluent-kafka, acks=all, idempotent; it finds and follows the partition's leader
  // itself) on host `from`, bootstrapping from every broker; the acknowledged ones go into the
  // history. Returns how many were acknowledged.
  int KafkaRound(int from, const std::string& topic, int partition, int n, std::string* err = nullptr) {
    std::string bootstrap;
    for (const auto& [id, b] : brokers) bootstrap += (bootstrap.empty() ? "" : ",") + b->kafka_address();
    const int first = written + 1;
    written += n;
    std::vector<std::string> argv = lab.Prefix(from);
    argv.insert(argv.end(),
                {"/usr/bin/python3", std::string(RDMQ_SOURCE_DIR) + "/tests/cluster/acks_all_producer.py",
                 bootstrap, topic, std::to_string(partition), std::to_string(first), std::to_string(n)});
    const RunResult r = Run(argv, "", 90);
    if (err != nullptr) *err = r.err;
    int acked = 0;
    std::istringstream out(r.out);
    long long offset = 0;
    std::string value;
    while (out >> offset >> value) {
      history.Acknowledged(partition, offset, value);
      ++acked;
    }
    return acked;
  }

  // The description of `topic`'s partition `partition` as broker `via` gives it (null on failure).
  json Partition(int via, const std::string& topic, int partition) {
    const RunResult r = Rdmq(via, {"topic", "describe", topic, "--json"});
    last_describe = "exit " + std::to_string(r.code) + "\n" + r.out + r.err;
    if (r.code != 0) return json();
    const json d = json::parse(r.out);
    for (const auto& p : d["partitions"]) {
      if (p["partition"] == partition) return p;
    }
    return json();
  }

  // Whether partition 0 of `topic`, as broker `via` describes it (into *part), has a leader and
  // `isr` replicas in sync.
  bool InSync(int via, const std::string& topic, size_t isr, json* part) {
    *part = Partition(via, topic, 0);
    return !part->is_null() && (*part)["leader"].get<int>() >= 1 && (*part)["isr"].size() == isr;
  }
  // Creates `topic`, one partition of three replicas (min.insync.replicas 2), and waits until all
  // three are in sync; returns its leader.
  int ReplicatedTopic(const std::string& topic) {
    REQUIRE_RUN(
        Rdmq(1, {"topic", "create", topic, "-c", "replication.factor=3", "-c", "min.insync.replicas=2"}), 0);
    json part;
    const bool ready = Eventually([&] { return InSync(1, topic, 3, &part); });
    INFO("the last description: " << last_describe);
    REQUIRE(ready);
    return part["leader"].get<int>();
  }

  // Reads a whole partition from host `from` through `via`: (offset, value) in order, or nullopt
  // when the read failed.
  std::optional<History::Records> ReadAll(int from, int via, const std::string& topic, int partition) {
    std::vector<std::string> argv = lab.Prefix(from);
    argv.insert(argv.end(),
                {Bin("rdmq-consume"), "-b", broker(via).address(), "-p", std::to_string(partition), "-e",
                 "-f", "%o %s\\n", "-X", "request.timeout.ms=2000", topic});
    const RunResult r = Run(argv, "", 30);
    last_read_error = "exit " + std::to_string(r.code) + ": " + r.err;
    if (r.code != 0) return std::nullopt;
    History::Records records;
    std::istringstream in(r.out);
    long long offset = 0;
    std::string value;
    while (in >> offset >> value) records.emplace_back(offset, value);
    return records;
  }
};

#define NETNS_CLUSTER(c, n)                                                        \
  if (const std::string why = NetLab::Unavailable(); !why.empty()) RDMQ_SKIP(why); \
  if (!ZooKeeperServer::Available())                                               \
    RDMQ_SKIP("Debian's zookeeper is not installed (deploy/install-deps.sh)");     \
  NetCluster c;                                                                    \
  c.Up(n)

TEST_CASE(
    "netns: a leader cut off from the cluster stops acknowledging before anyone else could lead, "
    "and returns with everything it acknowledged",
    "[e2e][cluster][netns]") {
  NETNS_CLUSTER(c, 3);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "t", "--partitions", "3"}), 0);
  const int leader = c.Leaders("t", 1).at(0);
  const int lh = c.host_of(leader);
  const int other = leader == 1 ? 2 : 1;

  // Before the cut: a client beside the leader writes.
  for (int i = 0; i < 3; ++i) CHECK(c.ProduceRound(lh, leader, "t", 0, 20) == 20);

  // Cut the leader's link. The client beside it still reaches it; the broker stops acknowledging
  // once it cannot hear from ZooKeeper (what it acknowledged until then is kept, not lost).
  REQUIRE(c.lab.Cut(lh));
  std::string err;
  int rounds = 0;
  const bool fenced = Eventually(
      [&] {
        ++rounds;
        return c.ProduceRound(lh, leader, "t", 0, 5, &err) == 0;
      },
      60s);
  INFO("last round's errors: " << err);
  REQUIRE(fenced);
  CHECK(Contains(err, "NOT_LEADER"));
  // From now on nothing is acknowledged or served by the cut-off broker.
  for (int i = 0; i < 3; ++i) CHECK(c.ProduceRound(lh, leader, "t", 0, 5) == 0);
  CHECK_FALSE(c.ReadAll(lh, leader, "t", 0).has_value());
  // The rest of the cluster sees the broker gone and its partition without a leader (the only
  // replica: no unclean election).
  REQUIRE(Eventually([&] {
    const RunResult r = c.Rdmq(other, {"cluster", "status", "--json"});
    return r.code == 0 && json::parse(r.out)["brokers"].size() == 2;
  }));
  CHECK(c.LeaderOf(other, "t", 0) == -1);

  // The link returns: the broker rejoins, is elected again, and serves everything it acknowledged.
  REQUIRE(c.lab.Mend(lh));
  REQUIRE(Eventually([&] { return c.LeaderOf(other, "t", 0) == leader; }));
  REQUIRE(Eventually([&] { return c.ProduceRound(lh, leader, "t", 0, 20) == 20; }));
  const History::Verdict v = c.Judge("t", {{0, leader}});
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged >= 80);
}

TEST_CASE("netns: every broker restarted in turn while clients write: nothing acknowledged is lost",
          "[e2e][cluster][netns]") {
  NETNS_CLUSTER(c, 3);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "r", "--partitions", "3"}), 0);
  const std::map<int, int> leader_of = c.Leaders("r", 3);
  // Each partition written from its leader's host (rdmq's tools talk to the leader): every
  // record acknowledged, except by a stopped broker, which has none acknowledged.
  auto write_all = [&](int stopped) {
    for (int p = 0; p < 3; ++p) {
      const int acked = c.ProduceRound(c.host_of(leader_of.at(p)), leader_of.at(p), "r", p, 10);
      CHECK(acked == (leader_of.at(p) == stopped ? 0 : 10));
    }
  };
  write_all(0);
  for (int id = 1; id <= 3; ++id) {
    CHECK(c.broker(id).Stop() == 0);
    write_all(id);
    std::string error;
    const bool started = c.broker(id).Start(&error);
    INFO(error);
    REQUIRE(started);
    const int via = id == 1 ? 2 : 1;
    REQUIRE(Eventually([&] {
      for (int p = 0; p < 3; ++p) {
        if (c.LeaderOf(via, "r", p) != leader_of.at(p)) return false;
      }
      return true;
    }));
    write_all(0);
  }
  const History::Verdict v = c.Judge("r", leader_of);
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged == 30 + 3 * (20 + 30));
}

TEST_CASE(
    "netns: ZooKeeper restarted while clients write: the brokers fence while it is away and "
    "serve again, nothing acknowledged is lost",
    "[e2e][cluster][netns]") {
  NETNS_CLUSTER(c, 3);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "z", "--partitions", "3"}), 0);
  const std::map<int, int> leader_of = c.Leaders("z", 3);
  auto write_all = [&] {
    int acked = 0;
    for (int p = 0; p < 3; ++p)
      acked += c.ProduceRound(c.host_of(leader_of.at(p)), leader_of.at(p), "z", p, 10);
    return acked;
  };
  CHECK(write_all() == 30);

  // ZooKeeper goes away: every broker stops serving (none can tell whether it still leads).
  c.zk->Stop();
  REQUIRE(Eventually([&] { return write_all() == 0; }, 60s));
  CHECK(write_all() == 0);
  // It comes back on the same port with the same data: the brokers serve again, each partition
  // still led by its broker (the sessions lived through, or were renewed and the brokers elected
  // again from their ISR of one).
  std::string error;
  const bool started = c.zk->Start(&error);
  INFO(error);
  REQUIRE(started);
  REQUIRE(Eventually([&] { return write_all() == 30; }, 60s));
  CHECK(c.Leaders("z", 3) == leader_of);
  const History::Verdict v = c.Judge("z", leader_of);
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged >= 60);
}

TEST_CASE(
    "netns: a leader killed with SIGKILL while a client writes: every record it acknowledged is there "
    "when it returns",
    "[e2e][cluster][netns]") {
  NETNS_CLUSTER(c, 3);
  REQUIRE_RUN(c.Rdmq(1, {"topic", "create", "k", "--partitions", "3"}), 0);
  const int leader = c.Leaders("k", 1).at(0);
  const int lh = c.host_of(leader);
  const int other = leader == 1 ? 2 : 1;
  // A writer beside the leader, round after round, while the leader is killed (bounded: 40 rounds).
  std::atomic<int> acked{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int round = 0; round < 40 && !stop.load(); ++round) acked += c.ProduceRound(lh, leader, "k", 0, 50);
  });
  REQUIRE(Eventually([&] { return acked.load() > 0; }));
  c.broker(leader).Kill();
  const int acked_at_kill = acked.load();
  stop = true;
  writer.join();
  CHECK(acked.load() >= acked_at_kill);
  REQUIRE(Eventually([&] { return c.LeaderOf(other, "k", 0) == -1; }));
  std::string error;
  const bool started = c.broker(leader).Start(&error);
  INFO(error);
  REQUIRE(started);
  REQUIRE(Eventually([&] { return c.LeaderOf(other, "k", 0) == leader; }));
  REQUIRE(Eventually([&] { return c.ProduceRound(lh, leader, "k", 0, 20) == 20; }));
  const History::Verdict v = c.Judge("k", {{0, leader}});
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged >= static_cast<size_t>(acked.load()) + 20);
}

TEST_CASE(
    "netns: a replicated partition's leader killed during acks=all writes: a follower in the ISR takes "
    "over and nothing acknowledged is lost",
    "[e2e][cluster][netns][replication]") {
  NETNS_CLUSTER(c, 3);
  const int first = c.ReplicatedTopic("a");
  json part;
  // A round from host 0 whose errors are shown when it is not acknowledged whole.
  auto round = [&](int n) {
    std::string err;
    const int acked = c.KafkaRound(0, "a", 0, n, &err);
    if (acked != n) WARN("a round of " << n << " got " << acked << " acknowledged: " << err);
    return acked;
  };
  REQUIRE(round(50) == 50);

  // The leader is killed while a Kafka client writes with acks=all, round after round (bounded:
  // 30 rounds of 200), and the client keeps writing across the election.
  std::atomic<int> acked{0};
  std::atomic<int> rounds{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 30 && !stop.load(); ++i) {
      acked += c.KafkaRound(0, "a", 0, 200);
      ++rounds;
    }
  });
  const bool writing = Eventually([&] { return acked.load() > 0; });
  c.broker(first).Kill();
  const int survivor = first == 1 ? 2 : 1;
  const bool elected =
      writing && Eventually([&] {
        part = c.Partition(survivor, "a", 0);
        return !part.is_null() && part["leader"].get<int>() >= 1 && part["leader"].get<int>() != first;
      });
  const int after_election = rounds.load();
  Eventually([&] { return rounds.load() >= after_election + 2; });
  stop = true;
  writer.join();
  REQUIRE(writing);
  REQUIRE(elected);
  const int second = part["leader"].get<int>();
  CHECK(part["leader_epoch"].get<int>() > 0);
  CHECK(rounds.load() >= after_election + 2);
  // The client continues at the new leader (two replicas in sync: acks=all is taken).
  REQUIRE(Eventually([&] { return round(20) == 20; }));

  // The killed broker returns as a follower: cut back where it took what the others never had,
  // fed the rest, back in the ISR.
  std::string error;
  const bool started = c.broker(first).Start(&error);
  INFO(error);
  REQUIRE(started);
  REQUIRE(Eventually([&] {
    part = c.Partition(survivor, "a", 0);
    return !part.is_null() && part["isr"].size() == 3;
  }));
  CHECK(round(20) == 20);

  // The second leader dies too: the remaining two, in sync, have every acknowledged record.
  c.broker(second).Kill();
  const int last_via = first;
  REQUIRE(Eventually([&] {
    part = c.Partition(last_via, "a", 0);
    return !part.is_null() && part["leader"].get<int>() >= 1 && part["leader"].get<int>() != second;
  }));
  const int third = part["leader"].get<int>();
  REQUIRE(Eventually([&] { return round(10) == 10; }));
  const History::Verdict v = c.Judge("a", {{0, third}});
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged >= static_cast<size_t>(50 + acked.load() + 20 + 20 + 10));
}

TEST_CASE(
    "netns: rdmq's own producer writing with acks=all through a replicated partition's leader that is "
    "killed: it follows the partition with its batches and nothing acknowledged is lost",
    "[e2e][cluster][netns][replication]") {
  NETNS_CLUSTER(c, 3);
  const int first = c.ReplicatedTopic("o");
  // One producer process bootstraps through the leader and writes across its death.
  std::string err;
  int acked = 0;
  std::thread writer([&] { acked = c.ProduceStream(0, first, "o", 0, 2000, &err); });
  json part;
  const bool writing = Eventually([&] {
    part = c.Partition(first, "o", 0);
    return !part.is_null() && part["high_watermark"].get<int64_t>() > 0;
  });
  c.broker(first).Kill();
  writer.join();
  REQUIRE(writing);
  INFO(err);
  CHECK(acked == 2000);
  CHECK(err.find("following a partition to its new leader") != std::string::npos);
  const int survivor = first == 1 ? 2 : 1;
  REQUIRE(Eventually([&] {
    part = c.Partition(survivor, "o", 0);
    return !part.is_null() && part["leader"].get<int>() >= 1 && part["leader"].get<int>() != first;
  }));
  const History::Verdict v = c.Judge("o", {{0, part["leader"].get<int>()}});
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged == 2000);
}

TEST_CASE(
    "netns: a replicated partition's leader cut off: it acknowledges and shows nothing more, a follower "
    "takes over, and the old leader returns as a follower cut back to the new leader's log",
    "[e2e][cluster][netns][replication]") {
  NETNS_CLUSTER(c, 3);
  const int first = c.ReplicatedTopic("cut");
  json part;
  const int lh = c.host_of(first);
  const int other = first == 1 ? 2 : 1;
  const int oh = c.host_of(other);
  // Rounds from `host` whose errors are shown when not acknowledged whole.
  auto round = [&](int host, int n) {
    std::string err;
    const int acked = c.KafkaRound(host, "cut", 0, n, &err);
    if (acked != n) WARN("a round of " << n << " from host " << host << " got " << acked << ": " << err);
    return acked;
  };
  REQUIRE(round(oh, 50) == 50);

  // The leader's link goes down. A Kafka client beside it still reaches it, and has nothing
  // acknowledged (its followers are out of reach, then it fences itself); a reader there gets
  // nothing once it fenced.
  REQUIRE(c.lab.Cut(lh));
  CHECK(c.KafkaRound(lh, "cut", 0, 10) == 0);
  CHECK(c.KafkaRound(lh, "cut", 0, 10) == 0);
  CHECK_FALSE(c.ReadAll(lh, first, "cut", 0).has_value());
  // The rest of the cluster elects a follower from the ISR; a client there continues.
  REQUIRE(Eventually([&] {
    part = c.Partition(other, "cut", 0);
    return !part.is_null() && part["leader"].get<int>() >= 1 && part["leader"].get<int>() != first;
  }));
  const int second = part["leader"].get<int>();
  REQUIRE(Eventually([&] { return round(oh, 20) == 20; }));

  // The link returns: the old leader follows the new one, cut back to where their logs agree
  // (what it took while cut off goes), fed the rest, and rejoins the ISR.
  REQUIRE(c.lab.Mend(lh));
  REQUIRE(Eventually([&] {
    part = c.Partition(other, "cut", 0);
    return !part.is_null() && part["leader"].get<int>() == second && part["isr"].size() == 3;
  }));
  CHECK(round(oh, 20) == 20);
  // The new leader dies: the others, the old leader among them, have everything acknowledged.
  c.broker(second).Kill();
  const int via = second == first ? other : first;
  REQUIRE(Eventually([&] {
    part = c.Partition(via, "cut", 0);
    return !part.is_null() && part["leader"].get<int>() >= 1 && part["leader"].get<int>() != second;
  }));
  const int third = part["leader"].get<int>();
  REQUIRE(Eventually([&] { return round(c.host_of(third), 10) == 10; }));
  const History::Verdict v = c.Judge("cut", {{0, third}});
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged >= 50 + 20 + 20 + 10);
}

TEST_CASE(
    "netns: every broker of a replicated topic restarted in turn under acks=all writes: nothing acknowledged "
    "is lost",
    "[e2e][cluster][netns][replication]") {
  NETNS_CLUSTER(c, 3);
  c.ReplicatedTopic("rr");
  json part;
  auto in_sync = [&](int via) { return c.InSync(via, "rr", 3, &part); };
  auto round = [&](int n) {
    std::string err;
    const int acked = c.KafkaRound(0, "rr", 0, n, &err);
    if (acked != n) WARN("a round of " << n << " got " << acked << ": " << err);
    return acked;
  };
  CHECK(round(30) == 30);
  for (int id = 1; id <= 3; ++id) {
    INFO("broker " << id << " restarted");
    CHECK(c.broker(id).Stop() == 0);
    const int via = id == 1 ? 2 : 1;
    REQUIRE(Eventually([&] {
      part = c.Partition(via, "rr", 0);
      return !part.is_null() && part["isr"].size() == 2 && part["leader"].get<int>() != id;
    }));
    // Two replicas left, at least min.insync.replicas: the writes go on (at a new leader if the
    // stopped broker led).
    REQUIRE(Eventually([&] { return round(20) == 20; }));
    std::string error;
    const bool started = c.broker(id).Start(&error);
    INFO(error);
    REQUIRE(started);
    REQUIRE(Eventually([&] { return in_sync(via); }));
    CHECK(round(20) == 20);
  }
  const int leader = part["leader"].get<int>();
  const History::Verdict v = c.Judge("rr", {{0, leader}});
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged >= 30 + 3 * 40);
}

TEST_CASE(
    "netns: ZooKeeper restarted under acks=all writes to a replicated topic: nothing acknowledged is lost",
    "[e2e][cluster][netns][replication]") {
  NETNS_CLUSTER(c, 3);
  c.ReplicatedTopic("zr");
  json part;
  auto in_sync = [&] { return c.InSync(1, "zr", 3, &part); };
  CHECK(c.KafkaRound(0, "zr", 0, 30) == 30);
  // ZooKeeper goes away: no broker may tell whether it still leads, so none acknowledges.
  c.zk->Stop();
  REQUIRE(Eventually([&] { return c.KafkaRound(0, "zr", 0, 5) == 0; }, 60s));
  // It returns: the partition is served and replicated again, every replica back in sync.
  std::string error;
  const bool started = c.zk->Start(&error);
  INFO(error);
  REQUIRE(started);
  REQUIRE(Eventually([&] { return c.KafkaRound(0, "zr", 0, 20) == 20; }, 60s));
  REQUIRE(Eventually(in_sync));
  CHECK(c.KafkaRound(0, "zr", 0, 20) == 20);
  const History::Verdict v = c.Judge("zr", {{0, part["leader"].get<int>()}});
  INFO(v.ToString());
  CHECK(v.ok());
  CHECK(v.acknowledged >= 70);
}

}  // namespace
}  // namespace rdmq::test
