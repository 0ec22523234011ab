// Consumer groups end to end: an rdmq-broker process and group members as child processes
// (rdmq_e2e_peer group), on shm and tcp. The members print what they consume and commit; the
// test reads their output files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "rdmq/client/admin.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"

namespace rdmq::test {
namespace {

using namespace std::chrono_literals;
using Rec = std::pair<int32_t, int64_t>;  // partition, offset

// What one member printed so far.
struct MemberLog {
  std::vector<Rec> records;
  std::map<int32_t, int64_t> committed;  // partition -> last committed position
  std::set<Rec> after_last_commit;       // records consumed past the partition's last commit
  std::vector<std::pair<std::string, std::vector<int32_t>>> events;  // assigned/revoked/lost
  bool closed = false;
};

MemberLog ReadLog(const std::string& path) {
  MemberLog m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string what;
    ls >> what;
    if (what == "rec") {
      Rec r;
      ls >> r.first >> r.second;
      m.records.push_back(r);
      m.after_last_commit.insert(r);
    } else if (what == "committed") {
      int32_t p;
      int64_t pos;
      ls >> p >> pos;
      m.committed[p] = pos;
      std::erase_if(m.after_last_commit, [&](const Rec& r) { return r.first == p && r.second < pos; });
    } else if (what == "assigned" || what == "revoked" || what == "lost") {
      std::vector<int32_t> ps;
      int32_t p;
      while (ls >> p) ps.push_back(p);
      m.events.emplace_back(what, ps);
    } else if (what == "closed") {
      m.closed = true;
    }
  }
  return m;
}

void Produce(const BrokerProcess& b, const std::string& topic, int partitions, int per_partition) {
  producer::ProducerConfig pc;
  pc.client = b.Options();
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  const std::string value(64, 'v');
  for (int i = 0; i < per_partition; ++i) {
    for (int32_t part = 0; part < partitions; ++part) {
      producer::ProducerRecord r;
      r.topic = topic;
      r.partition = part;
      r.value = value;
      REQUIRE_OK((*p)->Send(r, [](const Result<producer::RecordMetadata>&) {}));
    }
  }
  REQUIRE_OK((*p)->Flush(std::chrono::seconds(60)));
}

Child StartMember(const BrokerProcess& b, const std::string& out, const std::string& group,
                  std::vector<std::string> extra) {
  std::vector<std::string> argv = {
      BinDir() + "/rdmq_e2e_peer", "group", b.control(), group, "orders", "session.timeout.ms=2000",
      "enable.auto.commit=false"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Child(argv, out);
}

// Waits (bounded) until `done` holds over the members' logs.
template <class F>
bool WaitUntil(std::chrono::seconds limit, F done) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

E2E_BOTH(GroupMemberKilled,
         "a killed group member's partitions move and every record is consumed once past commits",
         "[e2e][group]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric, {"group.heartbeat.interval.ms=200"});
  auto admin = client::AdminClient::Connect(broker.Options());
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("orders", {{"partitions", "6"}}));
  constexpr int kPerPartition = 1500;
  Produce(broker, "orders", 6, kPerPartition);

  std::vector<std::string> outs;
  std::vector<Child> members;
  for (int i = 0; i < 3; ++i) {
    outs.push_back((dir.path() / ("member" + std::to_string(i) + ".out")).string());
    members.push_back(StartMember(broker, outs[i], "billing", {"max.poll.records=20", "sleep.ms=10"}));
  }
  const auto unique_consumed = [&] {
    std::set<Rec> all;
    for (const auto& o : outs) {
      for (const Rec& r : ReadLog(o).records) all.insert(r);
    }
    return all.size();
  };
  // Every member got partitions, and some records are consumed: kill member 0.
  REQUIRE(WaitUntil(30s, [&] {
    for (const auto& o : outs) {
      if (ReadLog(o).committed.empty()) return false;
    }
    return unique_consumed() >= 6 * kPerPartition / 4;
  }));
  members[0].Kill(SIGKILL);
  const MemberLog dead = ReadLog(outs[0]);
  std::set<int32_t> dead_parts;
  for (const auto& [p, pos] : dead.committed) dead_parts.insert(p);
  INFO("member 0 held " << dead_parts.size() << " partitions");
  REQUIRE_FALSE(dead_parts.empty());

  // The others take over within the session timeout and finish everything.
  REQUIRE(WaitUntil(60s, [&] { return unique_consumed() == 6u * kPerPartition; }));
  for (size_t i = 1; i < members.size(); ++i) members[i].Kill(SIGTERM);

  std::map<Rec, int> seen;
  for (const auto& o : outs) {
    for (const Rec& r : ReadLog(o).records) ++seen[r];
  }
  REQUIRE(seen.size() == 6u * kPerPartition);
  size_t duplicates = 0;
  for (const auto& [r, n] : seen) {
    if (n == 1) continue;
    duplicates += static_cast<size_t>(n - 1);
    // A record read twice must be one the dead member read after its partition's last commit.
    INFO("partition " << r.first << " offset " << r.second << " read " << n << " times");
    CHECK(n == 2);
    CHECK(dead.after_last_commit.count(r) == 1);
  }
  CHECK(duplicates <= dead.after_last_commit.size());
  // The survivors read the dead member's partitions after it died.
  std::set<int32_t> taken_over;
  for (size_t i = 1; i < outs.size(); ++i) {
    for (const auto& [what, ps] : ReadLog(outs[i]).events) {
      if (what == "assigned") taken_over.insert(ps.begin(), ps.end());
    }
  }
  for (int32_t p : dead_parts) CHECK(taken_over.count(p) == 1);
}

E2E_BOTH(CooperativeStickyMovesOnlyWhatItMust,
         "cooperative-sticky: a member added and removed moves only the partitions it must", "[e2e][group]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric, {"group.heartbeat.interval.ms=100"});
  auto admin = client::AdminClient::Connect(broker.Options());
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("orders", {{"partitions", "6"}}));
  const std::vector<std::string> extra = {"partition.assignment.strategy=cooperative-sticky", "commit=0"};
  std::vector<std::string> outs;
  std::vector<Child> members;
  const auto owned = [&](size_t i) {
    std::set<int32_t> own;
    for (const auto& [what, ps] : ReadLog(outs[i]).events) {
      for (int32_t p : ps) {
        if (what == "assigned") {
          own.insert(p);
        } else {
          own.erase(p);
        }
      }
    }
    return own;
  };
  const auto revoked_count = [&](size_t i) {
    size_t n = 0;
    for (const auto& [what, ps] : ReadLog(outs[i]).events) n += what == "assigned" ? 0 : ps.size();
    return n;
  };
  const auto settled = [&](std::vector<size_t> sizes) {
    size_t total = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (owned(i).size() != sizes[i]) return false;
      total += owned(i).size();
    }
    return total == 6;
  };
  for (int i = 0; i < 2; ++i) {
    outs.push_back((dir.path() / ("m" + std::to_string(i) + ".out")).string());
    members.push_back(StartMember(broker, outs.back(), "sticky", extra));
  }
  REQUIRE(WaitUntil(30s, [&] { return settled({3, 3}); }));
  const size_t revoked_before = revoked_count(0) + revoked_count(1);
  const auto before0 = owned(0), before1 = owned(1);

  // A third member: exactly two partitions move to it, one from each, and nothing else is revoked.
  outs.push_back((dir.path() / "m2.out").string());
  members.push_back(StartMember(broker, outs.back(), "sticky", extra));
  REQUIRE(WaitUntil(30s, [&] { return settled({2, 2, 2}); }));
  CHECK(revoked_count(0) + revoked_count(1) - revoked_before == 2);
  for (int32_t p : owned(0)) CHECK(before0.count(p) == 1);
  for (int32_t p : owned(1)) CHECK(before1.count(p) == 1);

  // It leaves (Close): its two partitions go back, and the others revoke nothing.
  const size_t revoked_mid = revoked_count(0) + revoked_count(1);
  members[2].Kill(SIGTERM);
  REQUIRE(WaitUntil(30s, [&] { return owned(0).size() + owned(1).size() == 6; }));
  CHECK(revoked_count(0) + revoked_count(1) == revoked_mid);
  CHECK(ReadLog(outs[2]).closed);
}

TEST_CASE("committed offsets survive a broker restart", "[e2e][group][shm]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  auto admin = client::AdminClient::Connect(broker.Options());
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("orders", {{"partitions", "2"}}));
  Produce(broker, "orders", 2, 10);
  consumer::ConsumerConfig cc;
  cc.client = broker.Options();
  cc.group_id = "g";
  {
    auto c = consumer::Consumer::Create(cc);
    REQUIRE_OK(c);
    REQUIRE_OK((*c)->CommitSync({{{"orders", 0}, {7, "meta", -1}}, {{"orders", 1}, {3, "", -1}}}));
    // Bad commits: unknown topic and partition, a negative offset; nothing of them is stored.
    CHECK_FALSE((*c)->CommitSync({{{"nope", 0}, {1, "", -1}}}).ok());
    CHECK_FALSE((*c)->CommitSync({{{"orders", 9}, {1, "", -1}}}).ok());
    CHECK_FALSE((*c)->CommitSync({{{"orders", 0}, {-5, "", -1}}}).ok());
  }
  broker.Kill();
  START_BROKER(again, dir, "shm");
  cc.client = again.Options();
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  auto committed = (*c)->Committed({{"orders", 0}, {"orders", 1}, {"orders", 5}});
  REQUIRE_OK(committed);
  CHECK(committed->at({"orders", 0}) == consumer::OffsetAndMetadata{7, "meta", -1});
  CHECK(committed->at({"orders", 1}).offset == 3);
  CHECK(committed->at({"orders", 5}).offset == -1);
  // A subscribed consumer starts from the committed offsets.
  REQUIRE_OK((*c)->Subscribe({"orders"}));
  std::map<int32_t, int64_t> first;
  for (int i = 0; i < 100 && first.size() < 2; ++i) {
    auto records = (*c)->Poll(100ms);
    REQUIRE_OK(records);
    for (const auto& r : *records) first.emplace(r.partition, r.offset);
  }
  CHECK(first[0] == 7);
  CHECK(first[1] == 3);
}

TEST_CASE("a regex subscription picks up new topics and added partitions", "[e2e][group][shm]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm", {"group.heartbeat.interval.ms=50"});
  auto admin = client::AdminClient::Connect(broker.Options());
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("orders", {{"partitions", "1"}}));
  REQUIRE_OK((*admin)->CreateTopic("payments", {{"partitions", "1"}}));
  consumer::ConsumerConfig cc;
  cc.client = broker.Options();
  cc.group_id = "re";
  cc.session_timeout = 3s;
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->SubscribePattern("ord.*"));
  const auto assigned = [&](size_t n) {
    for (int i = 0; i < 200; ++i) {
      REQUIRE_OK((*c)->Poll(20ms));
      if ((*c)->Assignment().size() == n) return true;
    }
    return false;
  };
  REQUIRE(assigned(1));
  CHECK((*c)->Assignment()[0] == consumer::TopicPartition{"orders", 0});
  REQUIRE_OK((*admin)->CreateTopic("orders-eu", {{"partitions", "2"}}));
  REQUIRE(assigned(3));
  REQUIRE_OK((*admin)->AlterTopic("orders", {{"partitions", "3"}}));
  REQUIRE(assigned(5));
  for (const auto& tp : (*c)->Assignment()) CHECK(tp.topic != "payments");
  // Pause keeps a partition assigned but returns nothing from it until resumed.
  REQUIRE_OK((*c)->Pause({{"orders", 0}}));
  CHECK((*c)->Paused() == std::vector<consumer::TopicPartition>{{"orders", 0}});
  CHECK((*c)->Pause({{"payments", 0}}).is(Errc::kInvalidArgument));
  producer::ProducerConfig pc;
  pc.client = broker.Options();
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  producer::ProducerRecord r;
  r.topic = "orders";
  r.partition = 0;
  r.value = "x";
  REQUIRE_OK((*p)->Send(r).get());
  for (int i = 0; i < 5; ++i) {
    auto records = (*c)->Poll(20ms);
    REQUIRE_OK(records);
    CHECK(records->empty());
  }
  REQUIRE_OK((*c)->Resume({{"orders", 0}}));
  bool got = false;
  for (int i = 0; i < 100 && !got; ++i) {
    auto records = (*c)->Poll(20ms);
    REQUIRE_OK(records);
    got = !records->empty();
  }
  CHECK(got);
  (*c)->Close();
  CHECK((*c)->Poll(1ms).status().is(Errc::kFailedPrecondition));
}

TEST_CASE("group calls without group.id, bad group ids and bad subscriptions are refused clearly",
          "[e2e][group][shm]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  consumer::ConsumerConfig cc;
  cc.client = broker.Options();
  {
    auto c = consumer::Consumer::Create(cc);
    REQUIRE_OK(c);
    CHECK((*c)->Subscribe({"t"}).is(Errc::kFailedPrecondition));
    CHECK((*c)->CommitSync().is(Errc::kFailedPrecondition));
  }
  cc.group_id = "has space";
  CHECK(consumer::Consumer::Create(cc).status().is(Errc::kInvalidArgument));
  cc.group_id = "g";
  cc.assignor = "fastest";
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->Subscribe({"t"}));
  Status seen;
  for (int i = 0; i < 100 && seen.ok(); ++i) seen = (*c)->Poll(20ms).status();
  INFO(seen.ToString());
  CHECK(seen.ToString().find("fastest") != std::string::npos);
  CHECK((*c)->Subscribe({}).is(Errc::kInvalidArgument));
}

}  // namespace
}  // namespace rdmq::test
