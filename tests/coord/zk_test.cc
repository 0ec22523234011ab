// ZkSession against a real ZooKeeper (tests/support/zookeeper_server.h): nodes created, read,
// compare-and-set, deleted; ephemeral nodes that go with their session; sequential names; one-shot
// watches on data and children; all-or-nothing Multi; a session that rides through a ZooKeeper
// restart; clear errors when nothing answers.
#include "rdmq/coord/zk.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <thread>

#include "support/test_util.h"
#include "support/zookeeper_server.h"

namespace rdmq::coord {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<ZkSession> Open(const std::string& connect, std::function<void(SessionState)> on_state = {}) {
  SessionOptions o;
  o.connect = connect;
  o.session_timeout = 4000ms;
  o.on_state = std::move(on_state);
  auto s = ZkSession::Connect(o);
  REQUIRE_OK(s);
  return std::move(*s);
}

// What watches saw, for the test thread to wait on.
struct Seen {
  std::mutex mu;
  std::vector<std::pair<WatchEvent, std::string>> events;
  Watcher Watch() {
    return [this](WatchEvent e, const std::string& path) {
      std::lock_guard lock(mu);
      events.emplace_back(e, path);
    };
  }
  size_t WaitFor(size_t n, std::chrono::milliseconds within = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu);
        if (events.size() >= n) return events.size();
      }
      std::this_thread::sleep_for(10ms);
    }
    std::lock_guard lock(mu);
    return events.size();
  }
};

TEST_CASE("zk: create, get, compare-and-set, delete, with clear errors", "[coord][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  auto s = Open(zk.connect());
  CHECK(s->state() == SessionState::kConnected);
  CHECK(s->session_id() != 0);

  REQUIRE_OK(s->CreateParents("/rdmq/topics"));
  REQUIRE_OK(s->CreateParents("/rdmq/topics"));  // again: fine
  auto made = s->Create("/rdmq/topics/orders", "v1", CreateMode::kPersistent);
  REQUIRE_OK(made);
  CHECK(*made == "/rdmq/topics/orders");
  CHECK(s->Create("/rdmq/topics/orders", "v1", CreateMode::kPersistent).status().is(CoordErrc::kNodeExists));
  CHECK(s->Create("/rdmq/nope/x", "", CreateMode::kPersistent).status().is(CoordErrc::kNoNode));
  CHECK(s->Create("/rdmq/nope/x", "", CreateMode::kPersistent).status().is(Errc::kNotFound));

  auto n = s->Get("/rdmq/topics/orders");
  REQUIRE_OK(n);
  CHECK(n->data == "v1");
  const int32_t v = n->stat.version;
  // Compare-and-set: the right version wins once; the stale one loses.
  auto set = s->Set("/rdmq/topics/orders", "v2", v);
  REQUIRE_OK(set);
  CHECK(set->version == v + 1);
  auto stale = s->Set("/rdmq/topics/orders", "v3", v);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.status().is(CoordErrc::kBadVersion));
  CHECK(s->Get("/rdmq/topics/orders")->data == "v2");

  auto kids = s->Children("/rdmq/topics");
  REQUIRE_OK(kids);
  CHECK(*kids == std::vector<std::string>{"orders"});
  CHECK(s->Delete("/rdmq/topics").is(CoordErrc::kNotEmpty));
  CHECK(s->Delete("/rdmq/topics/orders", v).is(CoordErrc::kBadVersion));
  REQUIRE_OK(s->Delete("/rdmq/topics/orders", v + 1));
  CHECK(s->Get("/rdmq/topics/orders").status().is(CoordErrc::kNoNode));
  auto gone = s->Exists("/rdmq/topics/orders");
  REQUIRE_OK(gone);
  CHECK_FALSE(gone->has_value());

  // Larger data survives whole.
  const std::string big(300000, 'x');
  REQUIRE_OK(s->Create("/rdmq/big", big, CreateMode::kPersistent));
  CHECK(s->Get("/rdmq/big")->data == big);
  CHECK(JoinPath("/rdmq/", "/a") == "/rdmq/a");
  CHECK(JoinPath("/rdmq", "a") == "/rdmq/a");
}

TEST_CASE("zk: ephemeral nodes go with their session, watches see it, sequential names grow", "[coord][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  auto watcher = Open(zk.connect());
  REQUIRE_OK(watcher->CreateParents("/rdmq/brokers/ids"));
  Seen seen;
  {
    auto broker = Open(zk.connect());
    REQUIRE_OK(broker->Create("/rdmq/brokers/ids/1", "{\"id\":1}", CreateMode::kEphemeral));
    auto n = watcher->Get("/rdmq/brokers/ids/1", seen.Watch());
    REQUIRE_OK(n);
    CHECK(n->stat.ephemeral_owner == broker->session_id());
    CHECK(broker->Create("/rdmq/brokers/ids/1/x", "", CreateMode::kPersistent)
              .status()
              .is(CoordErrc::kNoChildrenForEphemerals));
    auto a = broker->Create("/rdmq/brokers/seq-", "", CreateMode::kEphemeralSequential);
    auto b = broker->Create("/rdmq/brokers/seq-", "", CreateMode::kEphemeralSequential);
    REQUIRE_OK(a);
    REQUIRE_OK(b);
    CHECK(*a < *b);
    CHECK(a->size() == std::string("/rdmq/brokers/seq-").size() + 10);
  }  // the broker's session closes: its ephemeral nodes go at once
  REQUIRE(seen.WaitFor(1) == 1);
  CHECK(seen.events[0] == std::pair(WatchEvent::kDeleted, std::string("/rdmq/brokers/ids/1")));
  CHECK(watcher->Children("/rdmq/brokers/ids")->empty());
  auto left = watcher->Children("/rdmq/brokers");
  REQUIRE_OK(left);
  CHECK(*left == std::vector<std::string>{"ids"});
}

TEST_CASE("zk: watches are one-shot, on data and on children, and Multi is all or nothing", "[coord][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  auto s = Open(zk.connect());
  REQUIRE_OK(s->CreateParents("/t"));
  Seen data, kids, created;
  REQUIRE_OK(s->Create("/t/a", "1", CreateMode::kPersistent));
  REQUIRE_OK(s->Get("/t/a", data.Watch()));
  REQUIRE_OK(s->Children("/t", kids.Watch()));
  REQUIRE_OK(s->Exists("/t/later", created.Watch()));
  REQUIRE_OK(s->Set("/t/a", "2", -1));
  REQUIRE_OK(s->Set("/t/a", "3", -1));  // no watch left for this one
  REQUIRE_OK(s->Create("/t/b", "", CreateMode::kPersistent));
  REQUIRE_OK(s->Create("/t/later", "", CreateMode::kPersistent));
  REQUIRE(data.WaitFor(1) == 1);
  REQUIRE(kids.WaitFor(1) == 1);
  REQUIRE(created.WaitFor(1) == 1);
  std::this_thread::sleep_for(200ms);
  CHECK(data.WaitFor(2, 100ms) == 1);  // one-shot
  CHECK(data.events[0] == std::pair(WatchEvent::kChanged, std::string("/t/a")));
  CHECK(kids.events[0] == std::pair(WatchEvent::kChildren, std::string("/t")));
  CHECK(created.events[0] == std::pair(WatchEvent::kCreated, std::string("/t/later")));

  // Multi: a failing check leaves everything as it was.
  auto a = s->Get("/t/a");
  REQUIRE_OK(a);
  const Status lost = s->Multi({MultiOp::Check("/t/a", a->stat.version + 7), MultiOp::Create("/t/c", "c"),
                                MultiOp::Set("/t/b", "b", -1)});
  REQUIRE_FALSE(lost.ok());
  CHECK(lost.is(CoordErrc::kBadVersion));
  CHECK(s->Get("/t/c").status().is(CoordErrc::kNoNode));
  CHECK(s->Get("/t/b")->data.empty());
  REQUIRE_OK(s->Multi({MultiOp::Check("/t/a", a->stat.version), MultiOp::Create("/t/c", "c"),
                       MultiOp::Set("/t/b", "b", -1), MultiOp::Delete("/t/later", -1)}));
  CHECK(s->Get("/t/c")->data == "c");
  CHECK(s->Get("/t/b")->data == "b");
  CHECK(s->Get("/t/later").status().is(CoordErrc::kNoNode));
}

TEST_CASE("zk: GetMany reads many znodes at once, with Exists' watches, and fails each read clearly",
          "[coord][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  auto s = Open(zk.connect());
  REQUIRE_OK(s->CreateParents("/m"));
  // More than one of its windows (500 paths), every third one missing.
  constexpr int kPaths = 1203;
  std::vector<std::string> paths;
  for (int i = 0; i < kPaths; ++i) {
    paths.push_back("/m/n" + std::to_string(i));
    if (i % 3 != 0) REQUIRE_OK(s->Create(paths.back(), "v" + std::to_string(i), CreateMode::kPersistent));
  }
  REQUIRE_OK(s->Set("/m/n1", "v1 again", -1));  // version 1
  auto all = s->GetMany(paths);
  REQUIRE(all.size() == paths.size());
  for (int i = 0; i < kPaths; ++i) {
    INFO(paths[i]);
    REQUIRE_OK(all[i]);
    if (i % 3 == 0) {
      CHECK_FALSE(all[i]->has_value());
    } else {
      REQUIRE(all[i]->has_value());
      CHECK((*all[i])->data == (i == 1 ? "v1 again" : "v" + std::to_string(i)));
      CHECK((*all[i])->stat.version == (i == 1 ? 1 : 0));
    }
  }
  CHECK(s->GetMany({}).empty());

  // Watches as Exists sets them: on a change of a node that is there, on the creation of one
  // that is not; one-shot, and only where asked.
  Seen changed, made;
  std::vector<Watcher> watches(3);
  watches[1] = changed.Watch();  // /m/n1 exists
  watches[0] = made.Watch();     // /m/n0 does not
  auto some = s->GetMany({"/m/n0", "/m/n1", "/m/n2"}, std::move(watches));
  REQUIRE(some.size() == 3);
  REQUIRE_OK(s->Set("/m/n2", "unwatched", -1));
  REQUIRE_OK(s->Set("/m/n1", "changed", -1));
  REQUIRE_OK(s->Create("/m/n0", "made", CreateMode::kPersistent));
  REQUIRE(changed.WaitFor(1) == 1);
  REQUIRE(made.WaitFor(1) == 1);
  CHECK(changed.events[0] == std::pair(WatchEvent::kChanged, std::string("/m/n1")));
  CHECK(made.events[0] == std::pair(WatchEvent::kCreated, std::string("/m/n0")));
  REQUIRE_OK(s->Set("/m/n1", "again", -1));
  std::this_thread::sleep_for(200ms);
  CHECK(changed.WaitFor(2, 100ms) == 1);

  // A path ZooKeeper refuses fails that read alone, named; the others still read.
  auto mixed = s->GetMany({"/m/n1", "no-slash", "/m/n3"});
  REQUIRE(mixed.size() == 3);
  REQUIRE_OK(mixed[0]);
  CHECK((*mixed[0])->data == "again");
  REQUIRE_FALSE(mixed[1].ok());
  CHECK(mixed[1].status().is(CoordErrc::kBadArguments));
  CHECK(mixed[1].status().ToString().find("no-slash") != std::string::npos);
  REQUIRE_OK(mixed[2]);
  CHECK_FALSE(mixed[2]->has_value());

  // Without an answer from ZooKeeper every read fails (connection loss), and none hangs.
  zk.Stop();
  auto lost = s->GetMany({"/m/n1", "/m/n2"});
  REQUIRE(lost.size() == 2);
  for (const auto& r : lost) CHECK(r.status().is(Errc::kUnavailable));
}

TEST_CASE("zk: a session rides through a ZooKeeper restart, and nothing listening is a clear error",
          "[coord][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  std::atomic<int> disconnects{0}, connects{0};
  auto s = Open(zk.connect(), [&](SessionState st) {
    if (st == SessionState::kDisconnected) ++disconnects;
    if (st == SessionState::kConnected) ++connects;
  });
  REQUIRE_OK(s->Create("/mine", "", CreateMode::kEphemeral));
  zk.Stop();
  for (int i = 0; i < 100 && disconnects.load() == 0; ++i) std::this_thread::sleep_for(50ms);
  CHECK(disconnects.load() >= 1);
  auto during = s->Get("/mine");
  CHECK(during.status().is(Errc::kUnavailable));  // connection loss: no answer
  std::string error;
  REQUIRE(zk.Start(&error));  // within the session timeout: the session survives
  for (int i = 0; i < 200 && s->state() != SessionState::kConnected; ++i) std::this_thread::sleep_for(50ms);
  REQUIRE(s->state() == SessionState::kConnected);
  auto after = s->Get("/mine");
  REQUIRE_OK(after);
  CHECK(after->stat.ephemeral_owner == s->session_id());

  SessionOptions o;
  o.connect = "127.0.0.1:1";
  o.connect_timeout = 500ms;
  auto none = ZkSession::Connect(o);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().is(CoordErrc::kConnectionLoss));
  CHECK(none.status().ToString().find("127.0.0.1:1") != std::string::npos);
  o.connect = "";
  CHECK(ZkSession::Connect(o).status().is(CoordErrc::kBadArguments));
}

}  // namespace
}  // namespace rdmq::coord
