// GroupCoordinator with Kafka's classic protocol, in process over a metadata store in a temp dir:
// members joining and syncing through the asynchronous API from their own threads, one group id
// shared with rdmq's own protocol (each refused while the other holds it), commits validated by
// generation, List/Describe showing classic members with their parsed assignments, and the
// callbacks' threading contract.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "broker/group_coordinator.h"
#include "rdmq/group/consumer_protocol.h"
#include "rdmq/protocol/messages.h"
#include "support/test_util.h"

namespace rdmq::broker::internal {
namespace {

using namespace std::chrono_literals;
using group::ClassicErrc;
using protocol::WireError;

struct Fixture {
  explicit Fixture(uint32_t initial_delay_ms = 0) {
    cfg.group_initial_rebalance_delay_ms = initial_delay_ms;
    cfg.group_min_session_timeout_ms = 100;
    metadata::StoreOptions so;
    so.dir = dir.str();
    so.sync = false;
    auto m = metadata::MetadataStore::Open(so);
    REQUIRE_OK(m);
    meta = std::move(*m);
    auto o = metadata::OffsetStore::Open(so);
    REQUIRE_OK(o);
    offsets = std::move(*o);
    metadata::TopicConfig tc;
    tc.partitions = 4;
    REQUIRE_OK(meta->CreateTopic("orders", tc));
    gc = std::make_unique<GroupCoordinator>(cfg, *meta, *offsets);
    gc->Start();
  }
  ~Fixture() { gc->Stop(); }

  rdmq::test::TempDir dir;
  BrokerConfig cfg;
  std::unique_ptr<metadata::MetadataStore> meta;
  std::unique_ptr<metadata::OffsetStore> offsets;
  std::unique_ptr<GroupCoordinator> gc;
};

group::ClassicJoinRequest JoinReq(const std::string& client, std::chrono::milliseconds session = 10s,
                                  std::chrono::milliseconds rebalance = 10s) {
  group::ClassicJoinRequest r;
  r.client_id = client;
  r.client_host = "/127.0.0.1";
  r.protocol_type = "consumer";
  group::ConsumerSubscription s;
  s.topics = {"orders"};
  r.protocols = {{"range", group::EncodeConsumerSubscription(s, 1)}};
  r.session_timeout = session;
  r.rebalance_timeout = rebalance;
  r.require_known_member_id = true;
  return r;
}

// JoinGroup / SyncGroup as blocking calls, for client threads.
group::ClassicJoinResponse Join(GroupCoordinator& gc, const std::string& group,
                                const group::ClassicJoinRequest& r) {
  std::promise<group::ClassicJoinResponse> p;
  auto f = p.get_future();
  gc.JoinGroup(group, r, [&p](group::ClassicJoinResponse resp) { p.set_value(std::move(resp)); });
  return f.get();
}
group::ClassicSyncResponse Sync(GroupCoordinator& gc, const std::string& group,
                                const group::ClassicSyncRequest& r) {
  std::promise<group::ClassicSyncResponse> p;
  auto f = p.get_future();
  gc.SyncGroup(group, r, [&p](group::ClassicSyncResponse resp) { p.set_value(std::move(resp)); });
  return f.get();
}

// A Kafka consumer's group loop: join (with the MEMBER_ID_REQUIRED round trip), the leader
// deals the topic's partitions in turn, sync, heartbeat every 50 ms, rejoin when told. No
// Catch assertions here (not thread-safe): what it saw is published under its mutex.
struct KafkaClient {
  KafkaClient(GroupCoordinator& g, std::string group_id, std::string client)
      : gc(g), group(std::move(group_id)), name(std::move(client)) {}

  GroupCoordinator& gc;
  std::string group;
  std::string name;
  std::mutex mu;
  std::string member_id;
  int32_t generation = -1;
  std::vector<group::TopicPartition> assignment;
  std::vector<std::string> errors;
  std::atomic<bool> stop{false};

  void Run() {
    std::string id;
    while (!stop) {
      auto req = JoinReq(name);
      req.member_id = id;
      auto j = Join(gc, group, req);
      if (j.status.is(ClassicErrc::kMemberIdRequired)) {
        id = j.member_id;
        continue;
      }
      if (!j.ok()) {
        Error("join: " + j.status.ToString());
        id.clear();
        continue;
      }
      id = j.member_id;
      group::ClassicSyncRequest s{id, "", j.generation_id, "consumer", j.protocol_name, {}};
      if (j.leader_id == id) {
        std::map<std::string, std::vector<group::TopicPartition>> plan;
        for (int32_t p = 0; p < 4; ++p)
          plan[j.members[static_cast<size_t>(p) % j.members.size()].member_id].push_back({"orders", p});
        for (const auto& m : j.members) {
          group::ConsumerAssignment a;
          a.partitions = plan[m.member_id];
          s.assignments.push_back({m.member_id, group::EncodeConsumerAssignment(a, 1)});
        }
      }
      auto sr = Sync(gc, group, s);
      if (!sr.ok()) {
        if (!sr.status.is(ClassicErrc::kRebalanceInProgress)) Error("sync: " + sr.status.ToString());
        continue;
      }
      {
        std::lock_guard<std::mutex> l(mu);
        member_id = id;
        generation = j.generation_id;
        auto a = group::ParseConsumerAssignment(sr.assignment);
        assignment = a.ok() ? a->partitions : std::vector<group::TopicPartition>{};
      }
      while (!stop) {
        std::this_thread::sleep_for(50ms);
        Status hb = gc.ClassicHeartbeat(group, {id, "", j.generation_id});
        if (hb.ok()) continue;
        if (!hb.is(ClassicErrc::kRebalanceInProgress)) Error("heartbeat: " + hb.ToString());
        break;
      }
    }
  }
  void Error(const std::string& e) {
    std::lock_guard<std::mutex> l(mu);
    errors.push_back(e);
  }
  std::pair<std::string, int32_t> State() {
    std::lock_guard<std::mutex> l(mu);
    return {member_id, generation};
  }
};

TEST_CASE("classic coordinator: two Kafka members join and sync from their own threads",
          "[broker][classic]") {
  Fixture fx(200);
  KafkaClient a{*fx.gc, "kgroup", "client-a"};
  KafkaClient b{*fx.gc, "kgroup", "client-b"};
  std::thread ta([&] { a.Run(); });
  std::thread tb([&] { b.Run(); });
  // Wait until both hold their assignment of the group's current, Stable generation.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  bool settled = false;
  while (!settled && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    auto d = fx.gc->DescribeClassic("kgroup");
    settled = d.state == group::ClassicState::kStable && d.members.size() == 2 &&
              a.State().second == d.generation_id && b.State().second == d.generation_id;
  }
  REQUIRE(settled);

  // rdmq's own views show the Kafka members with their parsed subscriptions and assignments.
  auto desc = fx.gc->Describe("kgroup");
  REQUIRE_OK(desc);
  CHECK(desc->type == "classic");
  CHECK(desc->state == "Stable");
  CHECK(desc->assignor == "range");
  REQUIRE(desc->members.size() == 2);
  std::set<int32_t> owned;
  for (const auto& m : desc->members) {
    CHECK(m.topics == std::vector<std::string>{"orders"});
    CHECK(m.assignment.size() == 2);
    CHECK(m.member_epoch == desc->group_epoch);
    CHECK((m.client_id == "client-a" || m.client_id == "client-b"));
    for (const auto& tp : m.assignment) owned.insert(tp.partition.value());
  }
  CHECK(owned == std::set<int32_t>{0, 1, 2, 3});
  auto list = fx.gc->List();
  REQUIRE(list.groups.size() == 1);
  CHECK(list.groups[0].group == "kgroup");
  CHECK(list.groups[0].type == "classic");
  CHECK(list.groups[0].state == "Stable");
  CHECK(list.groups[0].members == 2);
  auto overview = fx.gc->Overview();
  REQUIRE(overview.size() == 1);
  CHECK(overview[0].protocol_type == "consumer");
  CHECK(fx.gc->Delete("kgroup").is(WireError::kGroupNotEmpty));

  // Commits are checked against the generation.
  const auto [aid, agen] = a.State();
  ClassicCommitRequest c{"kgroup", agen, aid, "", {{"orders", 0, 42, 3, "meta"}, {"nope", 0, 1, -1, ""}}};
  auto cr = fx.gc->CommitClassic(c);
  REQUIRE_OK(cr.status);
  REQUIRE(cr.partitions.size() == 2);
  CHECK_OK(cr.partitions[0]);
  CHECK(cr.partitions[1].is(ClassicErrc::kUnknownTopicOrPartition));
  c.generation_id = agen - 1;
  CHECK(fx.gc->CommitClassic(c).status.is(ClassicErrc::kIllegalGeneration));
  c.generation_id = agen;
  c.member_id = "stranger";
  CHECK(fx.gc->CommitClassic(c).partitions[0].is(ClassicErrc::kUnknownMemberId));
  c.member_id.clear();
  c.generation_id = -1;
  CHECK(fx.gc->CommitClassic(c).status.is(ClassicErrc::kUnknownMemberId));  // simple commit, members present
  auto fetched = fx.gc->Fetch({"kgroup", {}});
  REQUIRE_OK(fetched);
  REQUIRE(fetched->offsets.size() == 1);
  CHECK(fetched->offsets[0].offset.value() == 42);
  CHECK(fetched->offsets[0].leader_epoch == 3);
  CHECK(fetched->offsets[0].metadata == "meta");
  desc = fx.gc->Describe("kgroup");
  REQUIRE_OK(desc);
  CHECK(desc->offsets.size() == 1);

  a.stop = true;
  b.stop = true;
  ta.join();
  tb.join();
  {
    std::lock_guard<std::mutex> la(a.mu);
    std::lock_guard<std::mutex> lb(b.mu);
    INFO((a.errors.empty() ? "" : a.errors[0]) << (b.errors.empty() ? "" : b.errors[0]));
    CHECK(a.errors.empty());
    CHECK(b.errors.empty());
  }
  // Both leave: the group empties, and can be deleted with its offsets.
  auto left = fx.gc->LeaveGroup("kgroup", {{a.State().first, ""}, {b.State().first, ""}});
  CHECK_OK(left.members[0]);
  CHECK_OK(left.members[1]);
  CHECK_OK(fx.gc->Delete("kgroup"));
  CHECK(fx.gc->Describe("kgroup").status().is(WireError::kUnknownGroup));
  CHECK(fx.gc->DescribeClassic("kgroup").state == group::ClassicState::kDead);
}

TEST_CASE("classic coordinator: one group id, one protocol at a time", "[broker][classic]") {
  Fixture fx;
  // rdmq's own member holds "mixed": a Kafka JoinGroup is refused, saying why.
  protocol::GroupHeartbeatRequest hb;
  hb.group = "mixed";
  hb.topics = {"orders"};
  hb.session_timeout_ms = 10000;
  auto native = fx.gc->Heartbeat(hb, "rdmq-client");
  REQUIRE_OK(native);
  auto refused = Join(*fx.gc, "mixed", JoinReq("kafka"));
  CHECK(refused.status.is(ClassicErrc::kInconsistentGroupProtocol));
  CHECK(refused.status.ToString().find("rdmq") != std::string::npos);
  CHECK(fx.gc->ClassicHeartbeat("mixed", {"x", "", 1}).is(ClassicErrc::kInconsistentGroupProtocol));
  // A Kafka commit is checked against the rdmq member's epoch.
  ClassicCommitRequest c{"mixed", native->member_epoch, native->member_id, "", {{"orders", 1, 7, -1, ""}}};
  CHECK_OK(fx.gc->CommitClassic(c).status);
  c.generation_id = native->member_epoch + 1;
  CHECK(fx.gc->CommitClassic(c).status.is(ClassicErrc::kIllegalGeneration));
  // Kafka's DescribeGroups renders the rdmq group classic-style.
  auto kd = fx.gc->DescribeClassic("mixed");
  CHECK(kd.protocol_type == "consumer");
  REQUIRE(kd.members.size() == 1);
  auto sub = group::ParseConsumerSubscription(kd.members[0].metadata);
  REQUIRE_OK(sub);
  CHECK(sub->topics == std::vector<std::string>{"orders"});

  // Once the rdmq member left, Kafka members may take the id.
  hb.member_id = native->member_id;
  hb.member_epoch = protocol::kLeaveEpoch;
  REQUIRE_OK(fx.gc->Heartbeat(hb, "rdmq-client"));
  auto first = Join(*fx.gc, "mixed", JoinReq("kafka"));
  REQUIRE(first.status.is(ClassicErrc::kMemberIdRequired));
  auto req = JoinReq("kafka");
  req.member_id = first.member_id;
  auto joined = Join(*fx.gc, "mixed", req);  // initial delay 0: answered at once
  REQUIRE_OK(joined.status);
  CHECK(joined.generation_id == 1);

  // ... and now rdmq's own members are refused, and its simple commits too.
  protocol::GroupHeartbeatRequest hb2;
  hb2.group = "mixed";
  hb2.topics = {"orders"};
  hb2.session_timeout_ms = 10000;
  auto again = fx.gc->Heartbeat(hb2, "rdmq-client");
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().is(WireError::kInconsistentGroupProtocol));
  CHECK(again.status().ToString().find("Kafka") != std::string::npos);
  protocol::OffsetCommitRequest simple{"mixed", "", protocol::kSimpleCommitEpoch, {}};
  simple.offsets.push_back({"orders", PartitionId(0), Offset(5), -1, "", TimestampMs(0)});
  CHECK(fx.gc->Commit(simple).is(WireError::kUnknownMemberId));
  CHECK(fx.gc->Delete("mixed").is(WireError::kGroupNotEmpty));
}

TEST_CASE("classic coordinator: commits to groups without members", "[broker][classic]") {
  Fixture fx;
  ClassicCommitRequest c{"solo", -1, "", "", {{"orders", 2, 10, -1, ""}, {"orders", 9, 1, -1, ""}}};
  auto r = fx.gc->CommitClassic(c);
  REQUIRE_OK(r.status);
  CHECK_OK(r.partitions[0]);
  CHECK(r.partitions[1].is(ClassicErrc::kUnknownTopicOrPartition));
  c.generation_id = 3;
  c.member_id = "m";
  CHECK(fx.gc->CommitClassic(c).status.is(ClassicErrc::kIllegalGeneration));
  c.offsets = {{"orders", 0, 1, -1, std::string(5000, 'x')}};
  c.generation_id = -1;
  c.member_id.clear();
  CHECK(fx.gc->CommitClassic(c).partitions[0].is(ClassicErrc::kOffsetMetadataTooLarge));
  CHECK(fx.gc->CommitClassic({"bad group id", -1, "", "", {}}).status.is(ClassicErrc::kInvalidGroupId));
  auto list = fx.gc->List();
  REQUIRE(list.groups.size() == 1);
  CHECK(list.groups[0].type.empty());
  CHECK(fx.gc->DescribeClassic("solo").state == group::ClassicState::kEmpty);
}

TEST_CASE("classic coordinator: answers come outside the lock, from the timer thread too",
          "[broker][classic]") {
  Fixture fx;
  auto r = JoinReq("a", 2s, 2s);
  r.require_known_member_id = false;
  auto a = Join(*fx.gc, "timed", r);
  REQUIRE_OK(a.status);
  REQUIRE_OK(Sync(*fx.gc, "timed", {a.member_id, "", a.generation_id, "", "", {}}).status);
  // b joins; a never rejoins or heartbeats, so the timer thread ends a's session and completes
  // the join phase. The callback calls back into the coordinator (it would deadlock under the lock).
  std::promise<std::pair<group::ClassicJoinResponse, std::thread::id>> p;
  auto f = p.get_future();
  auto rb = JoinReq("b", 2s, 2s);
  rb.require_known_member_id = false;
  fx.gc->JoinGroup("timed", rb, [&](group::ClassicJoinResponse resp) {
    (void)fx.gc->List();
    p.set_value({std::move(resp), std::this_thread::get_id()});
  });
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  auto [resp, thread] = f.get();
  REQUIRE_OK(resp.status);
  CHECK(resp.generation_id == 2);
  CHECK(resp.members.size() == 1);
  CHECK(thread != std::this_thread::get_id());
  CHECK(fx.gc->ClassicHeartbeat("timed", {a.member_id, "", 1}).is(ClassicErrc::kUnknownMemberId));
}

TEST_CASE("classic coordinator: Stop answers waiting requests, later calls are refused",
          "[broker][classic]") {
  Fixture fx(60000);  // the initial delay keeps the first JoinGroup waiting
  auto r = JoinReq("a");
  r.require_known_member_id = false;
  std::promise<group::ClassicJoinResponse> p;
  auto f = p.get_future();
  fx.gc->JoinGroup("g", r, [&](group::ClassicJoinResponse resp) { p.set_value(std::move(resp)); });
  CHECK(f.wait_for(100ms) == std::future_status::timeout);
  CHECK(fx.gc->List().groups.size() == 1);
  fx.gc->Stop();
  REQUIRE(f.wait_for(0s) == std::future_status::ready);
  CHECK(f.get().status.is(ClassicErrc::kCoordinatorNotAvailable));
  CHECK(Join(*fx.gc, "g", r).status.is(ClassicErrc::kCoordinatorNotAvailable));
  CHECK(fx.gc->ClassicHeartbeat("g", {"m", "", 1}).is(ClassicErrc::kCoordinatorNotAvailable));
}

}  // namespace
}  // namespace rdmq::broker::internal
