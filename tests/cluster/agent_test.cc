// ClusterAgent against a real ZooKeeper (tests/support/zookeeper_server.h), three brokers' agents
// in this process: one controller is elected; a topic's replicas and leaders spread evenly; each
// broker is told the replicas it holds; when a broker leaves, the partitions it led get leaders
// from their ISR at a higher epoch and it leaves the ISRs; when the controller leaves, another
// takes over at a higher controller epoch; ISR changes are compare-and-set; topic administration;
// a broker id held by a live broker is refused; a ZooKeeper restart is ridden through (the brokers
// fenced while it is away).
#include "rdmq/cluster/agent.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "rdmq/coord/zk.h"
#include "support/test_util.h"
#include "support/zookeeper_server.h"

namespace rdmq::cluster {
namespace {

using namespace std::chrono_literals;

struct Recorder : AgentListener {
  std::mutex mu;
  ReplicaMap last;
  int updates = 0;
  int lost = 0;
  void OnReplicas(const ReplicaMap& r) override {
    std::lock_guard lock(mu);
    last = r;
    ++updates;
  }
  void OnSessionLost() override {
    std::lock_guard lock(mu);
    ++lost;
  }
  ReplicaMap Get() {
    std::lock_guard lock(mu);
    return last;
  }
  int Updates() {
    std::lock_guard lock(mu);
    return updates;
  }
  int Lost() {
    std::lock_guard lock(mu);
    return lost;
  }
};

struct Node {
  Recorder rec;
  std::unique_ptr<ClusterAgent> agent;
};

std::unique_ptr<Node> StartNode(const std::string& zk, BrokerId id) {
  auto n = std::make_unique<Node>();
  AgentOptions o;
  o.zookeeper = zk;
  o.session_timeout = 4000ms;
  o.refresh_interval = 200ms;
  o.self = BrokerInfo{id, "tcp:127.0.0.1:" + std::to_string(9000 + id),
                      "tcp:127.0.0.1:" + std::to_string(9100 + id), "127.0.0.1:" + std::to_string(9200 + id),
                      "tcp"};
  auto a = ClusterAgent::Start(o, &n->rec);
  REQUIRE_OK(a);
  n->agent = std::move(*a);
  return n;
}

// Waits until `ok` holds (checked every 20 ms, up to 15 s).
bool Eventually(const std::function<bool()>& ok) {
  for (int i = 0; i < 750; ++i) {
    if (ok()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return ok();
}

int Controllers(const std::vector<std::unique_ptr<Node>>& nodes) {
  int n = 0;
  for (const auto& x : nodes) n += x && x->agent->is_controller() ? 1 : 0;
  return n;
}

TEST_CASE(
    "cluster agent: one controller, even placement, leaders re-elected from the ISR when a broker leaves",
    "[cluster][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  std::vector<std::unique_ptr<Node>> nodes;
  for (BrokerId id : {1, 2, 3}) nodes.push_back(StartNode(zk.connect(), id));
  REQUIRE(Eventually([&] { return Controllers(nodes) == 1; }));

  auto made = nodes[1]->agent->CreateTopic("orders", {{"segment.bytes", "1048576"}}, 6, 3);
  REQUIRE_OK(made);
  CHECK(made->id >= 1);
  CHECK(nodes[0]->agent->CreateTopic("orders", {}, 1, 1).status().is(Errc::kAlreadyExists));
  CHECK(nodes[0]->agent->CreateTopic("wide", {}, 1, 4).status().is(ClusterErrc::kNotEnoughBrokers));
  REQUIRE_OK(nodes[0]->agent->WaitForLeaders("orders", 15s));

  auto snap = nodes[2]->agent->Snapshot();
  REQUIRE_OK(snap);
  CHECK(snap->brokers.size() == 3);
  CHECK(snap->brokers.at(2).kafka == "127.0.0.1:9202");
  std::map<BrokerId, int> leaders;
  for (int p = 0; p < 6; ++p) {
    const PartitionState& s = snap->states.at({"orders", p});
    CHECK(s.leader_epoch == 0);
    CHECK(s.isr.size() == 3);
    CHECK(s.leader == snap->topics.at("orders").replicas[static_cast<size_t>(p)][0]);
    ++leaders[s.leader];
  }
  CHECK(leaders == std::map<BrokerId, int>{{1, 2}, {2, 2}, {3, 2}});
  // Every broker is told of the 6 replicas it holds, with their state.
  for (const auto& n : nodes) {
    REQUIRE(Eventually([&] {
      const auto r = n->rec.Get();
      return r.size() == 6 && r.begin()->second.state.leader != kNoLeader;
    }));
  }

  // The controller leaves: another broker takes over at a higher epoch; the partitions the
  // leaver led get new leaders from their ISR, at epoch 1, and it leaves every ISR.
  size_t gone = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->agent->is_controller()) gone = i;
  }
  const BrokerId leaver = nodes[gone]->agent->id();
  const int32_t old_epoch = snap->controller_epoch;
  nodes[gone].reset();
  REQUIRE(Eventually([&] { return Controllers(nodes) == 1; }));
  REQUIRE(Eventually([&] {
    auto s = nodes[gone == 0 ? 1 : 0]->agent->Snapshot();
    if (!s.ok() || s->controller_epoch <= old_epoch) return false;
    for (int p = 0; p < 6; ++p) {
      const PartitionState& st = s->states.at({"orders", p});
      if (st.leader == leaver || st.InIsr(leaver) || st.leader == kNoLeader) return false;
    }
    return true;
  }));
  snap = nodes[gone == 0 ? 1 : 0]->agent->Snapshot();
  REQUIRE_OK(snap);
  CHECK(snap->brokers.size() == 2);
  for (int p = 0; p < 6; ++p) {
    const PartitionState& st = snap->states.at({"orders", p});
    const auto& replicas = snap->topics.at("orders").replicas[static_cast<size_t>(p)];
    CHECK(st.leader_epoch == (replicas[0] == leaver ? 1 : 0));
    CHECK(st.isr.size() == 2);
  }

  // It comes back (same id): it is a replica again, out of the ISR until its leader says otherwise.
  nodes[gone] = StartNode(zk.connect(), leaver);
  REQUIRE(Eventually([&] { return nodes[gone]->rec.Get().size() == 6; }));
  for (const auto& [tp, r] : nodes[gone]->rec.Get()) CHECK_FALSE(r.state.InIsr(leaver));
}

TEST_CASE("cluster agent: ISR changes are compare-and-set by the leader, and topic administration",
          "[cluster][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  std::vector<std::unique_ptr<Node>> nodes;
  for (BrokerId id : {1, 2}) nodes.push_back(StartNode(zk.connect(), id));
  REQUIRE_OK(nodes[0]->agent->CreateTopic("t", {{"retention.ms", "1000"}}, 2, 2));
  REQUIRE_OK(nodes[0]->agent->WaitForLeaders("t", 15s));
  auto snap = nodes[0]->agent->Snapshot();
  REQUIRE_OK(snap);
  const PartitionState s0 = snap->states.at({"t", 0});
  Node& leader = *nodes[static_cast<size_t>(s0.leader - 1)];
  Node& follower = *nodes[static_cast<size_t>(2 - s0.leader)];
  CHECK(follower.agent->ChangeIsr({"t", 0}, s0, {s0.leader}).status().is(ClusterErrc::kNotLeader));
  CHECK(leader.agent->ChangeIsr({"t", 0}, s0, {follower.agent->id()}).status().is(Errc::kInvalidArgument));
  auto shrunk = leader.agent->ChangeIsr({"t", 0}, s0, {s0.leader});
  REQUIRE_OK(shrunk);
  CHECK(shrunk->version == s0.version + 1);
  CHECK(shrunk->leader_epoch == s0.leader_epoch);
  // The stale state loses.
  CHECK(leader.agent->ChangeIsr({"t", 0}, s0, s0.isr).status().is(ClusterErrc::kStaleState));
  REQUIRE_OK(leader.agent->ChangeIsr({"t", 0}, *shrunk, s0.isr));
  REQUIRE(Eventually([&] {
    auto r = follower.rec.Get();
    auto it = r.find({"t", 0});
    return it != r.end() && it->second.state.version == shrunk->version + 1;
  }));

  // Alter, add partitions, delete.
  auto altered = nodes[1]->agent->AlterTopic("t", {{"retention.ms", "2000"}});
  REQUIRE_OK(altered);
  CHECK(altered->config == std::vector<std::pair<std::string, std::string>>{{"retention.ms", "2000"}});
  CHECK(nodes[1]->agent->AddPartitions("t", 2).status().is(Errc::kInvalidArgument));
  auto grown = nodes[1]->agent->AddPartitions("t", 4);
  REQUIRE_OK(grown);
  CHECK(grown->replicas.size() == 4);
  REQUIRE_OK(nodes[0]->agent->WaitForLeaders("t", 15s));
  REQUIRE(Eventually([&] { return nodes[0]->rec.Get().size() == 4; }));
  CHECK(nodes[0]->rec.Get().begin()->second.config ==
        std::vector<std::pair<std::string, std::string>>{{"retention.ms", "2000"}});
  REQUIRE_OK(nodes[0]->agent->DeleteTopic("t"));
  CHECK(nodes[0]->agent->DeleteTopic("t").is(Errc::kNotFound));
  CHECK(nodes[0]->agent->AlterTopic("t", {}).status().is(Errc::kNotFound));
  REQUIRE(Eventually([&] { return nodes[0]->rec.Get().empty() && nodes[1]->rec.Get().empty(); }));

  // Ids handed out are unique; a broker id held by a live broker is refused.
  auto a = nodes[0]->agent->NextTopicId();
  auto b = nodes[1]->agent->NextTopicId();
  REQUIRE_OK(a);
  REQUIRE_OK(b);
  CHECK(*a != *b);
  auto p1 = nodes[0]->agent->ProducerIdBlock(1000);
  auto p2 = nodes[1]->agent->ProducerIdBlock(1000);
  REQUIRE_OK(p1);
  REQUIRE_OK(p2);
  CHECK(std::abs(*p1 - *p2) >= 1000);
  Recorder dup;
  AgentOptions o;
  o.zookeeper = zk.connect();
  o.session_timeout = 1000ms;
  o.self = BrokerInfo{1, "tcp:x:1", "tcp:x:2", "", "tcp"};
  auto twin = ClusterAgent::Start(o, &dup);
  REQUIRE_FALSE(twin.ok());
  CHECK(twin.status().is(Errc::kAlreadyExists));
  CHECK(twin.status().ToString().find("broker.id 1 is registered") != std::string::npos);
}

TEST_CASE(
    "cluster agent: a wide topic's states are written in groups, and a group that fails lands one by one",
    "[cluster][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  std::vector<std::unique_ptr<Node>> nodes;
  for (BrokerId id : {1, 2}) nodes.push_back(StartNode(zk.connect(), id));
  REQUIRE(Eventually([&] { return Controllers(nodes) == 1; }));

  // 450 partitions: three of the controller's groups of 200 states.
  constexpr int kWide = 450;
  REQUIRE_OK(nodes[0]->agent->CreateTopic("wide", {}, kWide, 2));
  REQUIRE_OK(nodes[1]->agent->WaitForLeaders("wide", 15s));
  auto snap = nodes[1]->agent->Snapshot();
  REQUIRE_OK(snap);
  for (int p = 0; p < kWide; ++p) {
    const PartitionState& st = snap->states.at({"wide", p});
    CHECK(st.leader == snap->topics.at("wide").replicas[static_cast<size_t>(p)][0]);
    CHECK(st.isr.size() == 2);
  }
  for (const auto& n : nodes) REQUIRE(Eventually([&] { return n->rec.Get().size() == kWide; }));

  // A topic written to ZooKeeper by hand with partition 250's folder missing: the group holding
  // 250's state fails as a whole (its parent is not there), and is written again state by
  // state, so that every other partition gets its leader; 250 gets one once its folder is made.
  coord::SessionOptions zo;
  zo.connect = zk.connect();
  auto raw = coord::ZkSession::Connect(zo);
  REQUIRE_OK(raw);
  TopicAssignment t;
  t.name = "gap";
  t.id = 999;
  t.created_ms = 1;
  t.replicas.assign(300, std::vector<BrokerId>{1});
  std::vector<coord::MultiOp> ops{coord::MultiOp::Create("/rdmq/topics/gap", EncodeTopic(t)),
                                  coord::MultiOp::Create("/rdmq/topics/gap/partitions", "")};
  for (int p = 0; p < 300; ++p) {
    if (p != 250)
      ops.push_back(coord::MultiOp::Create("/rdmq/topics/gap/partitions/" + std::to_string(p), ""));
  }
  REQUIRE_OK((*raw)->Multi(ops));
  auto states_of_gap = [&] {
    auto s = nodes[0]->agent->Snapshot();
    int n = 0;
    if (s.ok()) {
      for (int p = 0; p < 300; ++p) n += s->states.count({"gap", p}) != 0 ? 1 : 0;
    }
    return n;
  };
  REQUIRE(Eventually([&] { return states_of_gap() == 299; }));
  snap = nodes[0]->agent->Snapshot();
  REQUIRE_OK(snap);
  CHECK(snap->states.count({"gap", 250}) == 0);
  CHECK(snap->states.at({"gap", 249}).leader == 1);
  CHECK(snap->states.at({"gap", 251}).leader == 1);
  CHECK(Controllers(nodes) == 1);  // a failed group is not a fence
  REQUIRE_OK((*raw)->Create("/rdmq/topics/gap/partitions/250", "", coord::CreateMode::kPersistent));
  REQUIRE(Eventually([&] { return states_of_gap() == 300; }));
}

TEST_CASE(
    "cluster agent: a reassignment waits for the new replicas in the ISR, then the controller completes it",
    "[cluster][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  std::vector<std::unique_ptr<Node>> nodes;
  for (BrokerId id : {1, 2, 3}) nodes.push_back(StartNode(zk.connect(), id));
  REQUIRE_OK(nodes[0]->agent->CreateTopic("m", {}, 1, 2));
  REQUIRE_OK(nodes[0]->agent->WaitForLeaders("m", 15s));
  auto snap = nodes[0]->agent->Snapshot();
  REQUIRE_OK(snap);
  const std::vector<BrokerId> before = snap->topics.at("m").replicas[0];
  const PartitionState s0 = snap->states.at({"m", 0});
  BrokerId spare = 1;
  while (std::find(before.begin(), before.end(), spare) != before.end()) ++spare;
  const BrokerId kept = before[0] == s0.leader ? before[1] : before[0];  // the follower stays
  ClusterAgent& admin = *nodes[0]->agent;

  // Refused: another count, a broker twice, one not registered, no such partition or topic.
  CHECK(admin.ReassignPartition("m", 0, {spare}).status().is(Errc::kInvalidArgument));
  CHECK(admin.ReassignPartition("m", 0, {spare, spare}).status().is(Errc::kInvalidArgument));
  CHECK(admin.ReassignPartition("m", 0, {spare, 9}).status().is(Errc::kInvalidArgument));
  CHECK(admin.ReassignPartition("m", 1, {spare, kept}).status().is(Errc::kInvalidArgument));
  CHECK(admin.ReassignPartition("none", 0, {spare, kept}).status().is(Errc::kNotFound));

  // Started: the spare is a replica beside the old ones (and told so), not yet in sync.
  auto moving = admin.ReassignPartition("m", 0, {spare, kept});
  REQUIRE_OK(moving);
  CHECK(moving->reassigning.at(0) == std::vector<BrokerId>{spare, kept});
  CHECK(moving->replicas[0] == std::vector<BrokerId>{spare, kept, s0.leader});
  Node& joining = *nodes[static_cast<size_t>(spare - 1)];
  REQUIRE(Eventually([&] { return joining.rec.Get().count({"m", 0}) == 1; }));
  CHECK(admin.ReassignPartition("m", 0, {kept, spare}).status().is(Errc::kFailedPrecondition));
  std::this_thread::sleep_for(1500ms);  // controller rounds: nothing completes it yet
  snap = admin.Snapshot();
  REQUIRE_OK(snap);
  CHECK(snap->topics.at("m").reassigning.size() == 1);
  CHECK(snap->states.at({"m", 0}).leader == s0.leader);

  // The leader finds the spare caught up (ChangeIsr): the controller completes the move, the
  // spare leads at a new epoch, and the old leader no longer holds a replica.
  Node& leader = *nodes[static_cast<size_t>(s0.leader - 1)];
  const PartitionState now = snap->states.at({"m", 0});
  REQUIRE_OK(leader.agent->ChangeIsr({"m", 0}, now, {s0.leader, kept, spare}));
  REQUIRE(Eventually([&] {
    auto s = admin.Snapshot();
    return s.ok() && s->topics.at("m").reassigning.empty() && s->states.at({"m", 0}).leader == spare;
  }));
  snap = admin.Snapshot();
  REQUIRE_OK(snap);
  CHECK(snap->topics.at("m").replicas[0] == std::vector<BrokerId>{spare, kept});
  const PartitionState& done = snap->states.at({"m", 0});
  CHECK(done.leader_epoch == now.leader_epoch + 1);
  CHECK(done.isr == std::vector<BrokerId>{spare, kept});
  REQUIRE(Eventually([&] { return leader.rec.Get().count({"m", 0}) == 0; }));
  // Only a new order of the same brokers: done at once, nothing to wait for.
  auto reordered = admin.ReassignPartition("m", 0, {kept, spare});
  REQUIRE_OK(reordered);
  CHECK(reordered->reassigning.empty());
  CHECK(reordered->replicas[0] == std::vector<BrokerId>{kept, spare});
}

TEST_CASE("cluster agent: a ZooKeeper restart is ridden through, and nothing to reach is a clear error",
          "[cluster][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  std::vector<std::unique_ptr<Node>> nodes;
  for (BrokerId id : {1, 2}) nodes.push_back(StartNode(zk.connect(), id));
  REQUIRE_OK(nodes[0]->agent->CreateTopic("t", {}, 2, 2));
  REQUIRE_OK(nodes[0]->agent->WaitForLeaders("t", 15s));
  const int updates_before[2] = {nodes[0]->rec.Updates(), nodes[1]->rec.Updates()};
  zk.Stop();
  std::this_thread::sleep_for(500ms);
  std::string error;
  REQUIRE(zk.Start(&error));
  // The sessions survive (back within their timeout): both brokers, one controller, the topic.
  REQUIRE(Eventually([&] {
    auto s = nodes[1]->agent->Snapshot();
    return s.ok() && s->brokers.size() == 2 && s->states.size() == 2;
  }));
  REQUIRE(Eventually([&] { return Controllers(nodes) == 1; }));
  // While ZooKeeper was away each broker stopped serving (it could not know whether its session
  // held), and once the session answered it was told its replicas again.
  for (int i = 0; i < 2; ++i) {
    CHECK(nodes[i]->rec.Lost() >= 1);
    CHECK(Eventually(
        [&] { return nodes[i]->rec.Updates() > updates_before[i] && nodes[i]->rec.Get().size() == 2; }));
  }

  Recorder r;
  AgentOptions o;
  o.zookeeper = "127.0.0.1:1";
  o.session_timeout = 1000ms;
  o.self = BrokerInfo{9, "tcp:x:1", "tcp:x:2", "", "tcp"};
  auto none = ClusterAgent::Start(o, &r);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().is(Errc::kUnavailable));
  CHECK(none.status().ToString().find("ZooKeeper at 127.0.0.1:1") != std::string::npos);
}

}  // namespace
}  // namespace rdmq::cluster
