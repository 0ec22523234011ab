// GroupOffsetStore against a real ZooKeeper (tests/support/zookeeper_server.h): commits of several
// topics merge into what a group has, all or none; group ids with any printable byte are one
// znode; listing, deleting a group and a topic; a corrupt znode is a clear error that changes
// nothing. And the escaping and the topic znode's JSON on their own.
#include "rdmq/cluster/group_offsets.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "rdmq/cluster/model.h"
#include "support/test_util.h"
#include "support/zookeeper_server.h"

namespace rdmq::cluster {
namespace {

using namespace std::chrono_literals;

TEST_CASE("group offsets: group ids escape to one znode name and back", "[cluster][unit]") {
  CHECK(EscapeName("billing-2_x") == "billing-2_x");
  CHECK(EscapeName("a/b.c") == "a%2Fb%2Ec");
  CHECK(EscapeName("..") == "%2E%2E");
  for (const std::string g : {"a/b.c", "..", "%", "x y", "~!@#$%^&*()"}) {
    auto back = UnescapeName(EscapeName(g));
    REQUIRE_OK(back);
    CHECK(*back == g);
  }
  CHECK(UnescapeName("a%2").status().is(ClusterErrc::kBadZnode));
  CHECK(UnescapeName("a%zz").status().is(ClusterErrc::kBadZnode));
  CHECK(UnescapeName("").status().is(ClusterErrc::kBadZnode));
}

TEST_CASE("group offsets: a topic's znode encodes and is checked on decode", "[cluster][unit]") {
  const std::map<int32_t, GroupOffset> parts{{0, {42, 3, "m", 1700000000000}}, {5, {0, -1, "", 0}}};
  auto back = DecodeTopicOffsets(EncodeTopicOffsets(parts), "z");
  REQUIRE_OK(back);
  CHECK(*back == parts);
  for (
      const char* bad : {
          R"({"version":1})",
          R"({"version":2,"partitions":[]})",
          R"({"version":1,"partitions":[{"partition":0,"offset":-1,"leader_epoch":-1,"metadata":"","commit_ms":0}]})",
          R"({"version":1,"partitions":[{"partition":0,"offset":1,"leader_epoch":-1,"metadata":"","commit_ms":0},
                                         {"partition":0,"offset":2,"leader_epoch":-1,"metadata":"","commit_ms":0}]})",
          R"({"version":1,"partitions":[{"partition":0,"offset":1,"leader_epoch":-1,"commit_ms":0}]})",
          R"({"version":1,"partitions":[7]})",
          "not json",
      }) {
    INFO(bad);
    CHECK(DecodeTopicOffsets(bad, "z").status().is(ClusterErrc::kBadZnode));
  }
}

TEST_CASE("group offsets: committed, merged, listed and deleted in ZooKeeper", "[cluster][zk]") {
  RDMQ_START_ZOOKEEPER(zk);
  coord::SessionOptions o;
  o.connect = zk.connect();
  o.session_timeout = 4000ms;
  auto session = coord::ZkSession::Connect(o);
  REQUIRE_OK(session);
  GroupOffsetStore store(**session, "/rdmq");

  auto none = store.Fetch("g");
  REQUIRE_OK(none);
  CHECK(none->empty());
  CHECK(store.DeleteGroup("g").is(coord::CoordErrc::kNoNode));

  REQUIRE_OK(store.Commit(
      "g",
      {{{"orders", 0}, {10, -1, "a", 1}}, {{"orders", 1}, {20, -1, "", 1}}, {{"audit", 0}, {5, 2, "", 1}}}));
  // A later commit replaces the partitions it names and keeps the others.
  REQUIRE_OK(store.Commit("g", {{{"orders", 1}, {25, -1, "b", 2}}}));
  auto got = store.Fetch("g");
  REQUIRE_OK(got);
  CHECK(*got == GroupOffsets{{{"orders", 0}, {10, -1, "a", 1}},
                             {{"orders", 1}, {25, -1, "b", 2}},
                             {{"audit", 0}, {5, 2, "", 1}}});

  REQUIRE_OK(store.Commit("a/b.c", {{{"orders", 0}, {1, -1, "", 1}}}));
  auto groups = store.Groups();
  REQUIRE_OK(groups);
  CHECK(*groups == std::vector<std::string>{"a/b.c", "g"});

  // A deleted topic leaves every group; a group left without topics is no longer listed.
  REQUIRE_OK(store.DeleteTopic("orders"));
  got = store.Fetch("g");
  REQUIRE_OK(got);
  CHECK(*got == GroupOffsets{{{"audit", 0}, {5, 2, "", 1}}});
  groups = store.Groups();
  REQUIRE_OK(groups);
  CHECK(*groups == std::vector<std::string>{"g"});

  // A corrupt znode: reading and committing to that topic fail naming it, and nothing changes.
  REQUIRE_OK((*session)->Set("/rdmq/groups/g/audit", "garbage", -1));
  CHECK(store.Fetch("g").status().is(ClusterErrc::kBadZnode));
  const Status refused = store.Commit("g", {{{"audit", 1}, {9, -1, "", 3}}, {{"fresh", 0}, {1, -1, "", 3}}});
  CHECK(refused.is(ClusterErrc::kBadZnode));
  CHECK(refused.ToString().find("/rdmq/groups/g/audit") != std::string::npos);
  auto fresh = (*session)->Exists("/rdmq/groups/g/fresh");
  REQUIRE_OK(fresh);
  CHECK_FALSE(fresh->has_value());

  REQUIRE_OK(store.DeleteGroup("g"));
  groups = store.Groups();
  REQUIRE_OK(groups);
  CHECK(groups->empty());
}

}  // namespace
}  // namespace rdmq::cluster
