// Routes (client/routes.h): where a client of a cluster reaches each partition, and the sticky
// partition of keyless records.
#include "rdmq/client/routes.h"

#include <catch2/catch.hpp>
#include <set>

#include "rdmq/protocol/messages.h"
#include "support/test_util.h"

namespace rdmq::client {
namespace {

TEST_CASE("routes: a partition goes to its leader or else its first replica, and unknowns are clear errors",
          "[client][routes]") {
  Routes r(1000);
  r.SetBrokers({{1, "tcp:10.0.0.1:9192"}, {2, "tcp:10.0.0.2:9192"}});
  CHECK_FALSE(r.PartitionCount("t").has_value());
  CHECK(r.BrokerOf("t", 0).status().is(Errc::kNotFound));

  r.SetTopic("t", {{2, {2, 1}}, {-1, {3}}, {-1, {}}});
  CHECK(r.PartitionCount("t") == 3);
  CHECK(*r.BrokerOf("t", 0) == 2);
  CHECK(*r.BrokerOf("t", 1) == 3);  // its broker is down: the one that leads it when it returns
  CHECK(r.BrokerOf("t", 2).status().is(protocol::WireError::kNotLeader));
  const Status beyond = r.BrokerOf("t", 3).status();
  CHECK(beyond.is(protocol::WireError::kUnknownPartition));
  CHECK(beyond.ToString().find("has 3 partitions") != std::string::npos);
  CHECK(r.BrokerOf("t", -1).status().is(protocol::WireError::kUnknownPartition));

  CHECK(*r.AddressOf(2) == "tcp:10.0.0.2:9192");
  const Status dead = r.AddressOf(3).status();
  CHECK(dead.is(Errc::kUnavailable));
  CHECK(dead.ToString().find("broker 3 is not live") != std::string::npos);
  r.SetBrokers({{3, "tcp:10.0.0.3:9192"}});  // the live set is replaced, not merged
  CHECK(*r.AddressOf(3) == "tcp:10.0.0.3:9192");
  CHECK(r.AddressOf(1).status().is(Errc::kUnavailable));

  r.SetTopic("t", {{1, {1}}, {1, {1}}, {1, {1}}});  // asked again: the new leaders
  for (int p = 0; p < 3; ++p) CHECK(*r.BrokerOf("t", p) == 1);
}

TEST_CASE("routes: the live brokers and a topic's partitions are read back as set", "[client][routes]") {
  Routes r(1000);
  CHECK(r.Brokers().empty());
  CHECK_FALSE(r.Partitions("t").has_value());
  r.SetBrokers({{3, "tcp:10.0.0.3:9192"}, {1, "tcp:10.0.0.1:9192"}});
  CHECK(r.Brokers() == std::vector<int32_t>{1, 3});
  const std::vector<PartitionRoute> parts{{2, {2, 1}}, {-1, {3, 1}}, {-1, {}}};
  r.SetTopic("t", parts);
  REQUIRE(r.Partitions("t").has_value());
  CHECK(*r.Partitions("t") == parts);
  CHECK(parts[0].destination() == 2);
  CHECK(parts[1].destination() == 3);  // no leader: the first replica
  CHECK(parts[2].destination() == -1);
}

// The partition Resolve picks for a keyless record of `bytes`.
int32_t Sticky(Routes& r, std::string_view topic, size_t bytes, uint32_t random) {
  auto t = r.Resolve(topic, -1, std::nullopt, bytes, random);
  REQUIRE(t.ok());
  CHECK(t->broker == *r.BrokerOf(topic, t->partition));
  return t->partition;
}

TEST_CASE("routes: a record names its partition or goes by key, in one look that names the broker too",
          "[client][routes]") {
  Routes r(1000);
  CHECK(r.Resolve("t", 0, std::nullopt, 10, 0).status().is(Errc::kNotFound));
  r.SetTopic("t", {{1, {1}}, {2, {2}}, {-1, {3}}});
  auto named = r.Resolve("t", 1, std::nullopt, 10, 0);
  REQUIRE(named.ok());
  CHECK((named->partition == 1 && named->broker == 2));
  auto keyed = r.Resolve("t", -1, 7u, 10, 0);  // 7 % 3
  REQUIRE(keyed.ok());
  CHECK((keyed->partition == 1 && keyed->broker == 2));
  auto down = r.Resolve("t", -1, 5u, 10, 0);  // 5 % 3: no leader, its first replica
  REQUIRE(down.ok());
  CHECK((down->partition == 2 && down->broker == 3));
  CHECK(r.Resolve("t", 3, std::nullopt, 10, 0).status().is(protocol::WireError::kUnknownPartition));
  r.SetTopic("empty", {});
  CHECK(r.Resolve("empty", -1, std::nullopt, 10, 0).status().is(protocol::WireError::kUnknownPartition));
}

TEST_CASE("routes: keyless records stick to a partition for batch.size bytes and then move to another",
          "[client][routes]") {
  Routes r(1000);
  r.SetTopic("t", {{1, {1}}, {2, {2}}, {3, {3}}, {1, {1}}});
  const int32_t first = Sticky(r, "t", 400, 6);
  CHECK(first == 6 % 4);
  CHECK(Sticky(r, "t", 400, 1) == first);
  CHECK(Sticky(r, "t", 400, 1) == first);  // 1200 bytes went to it now
  const int32_t second = Sticky(r, "t", 400, 0);
  CHECK(second != first);  // moved on, never to the same partition
  std::set<int32_t> seen{first, second};
  for (uint32_t i = 0; i < 40; ++i) seen.insert(Sticky(r, "t", 1000, i));
  CHECK(seen.size() == 4);  // every partition gets its turn

  // Partitions without a leader are passed over while any has one; the sticky one moves off a
  // partition whose leader went away.
  Routes gaps(1000);
  gaps.SetTopic("g", {{-1, {1}}, {2, {2}}, {-1, {3}}, {4, {4}}});
  std::set<int32_t> picked;
  for (uint32_t i = 0; i < 40; ++i) picked.insert(Sticky(gaps, "g", 1000, i));
  CHECK(picked == std::set<int32_t>{1, 3});
  const int32_t now = Sticky(gaps, "g", 10, 0);
  std::vector<PartitionRoute> lost{{1, {1}}, {2, {2}}, {3, {3}}, {4, {4}}};
  lost[static_cast<size_t>(now)].leader = -1;
  gaps.SetTopic("g", lost);
  CHECK(Sticky(gaps, "g", 10, 0) != now);
  gaps.SetTopic("g", {{-1, {1}}, {-1, {2}}});  // none has one: any will do (the record waits)
  const int32_t any = Sticky(gaps, "g", 10, 5);
  CHECK((any == 0 || any == 1));

  Routes one(1000);
  one.SetTopic("u", {{1, {1}}});
  for (uint32_t i = 0; i < 5; ++i) CHECK(Sticky(one, "u", 5000, i) == 0);
  CHECK(one.Resolve("unknown", -1, std::nullopt, 10, 3).status().is(Errc::kNotFound));
}

}  // namespace
}  // namespace rdmq::client
