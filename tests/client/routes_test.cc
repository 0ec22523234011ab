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

TEST_CASE("routes: keyless records stick to a partition for batch.size bytes and then move to another",
          "[client][routes]") {
  Routes r(1000);
  r.SetTopic("t", {{1, {1}}, {2, {2}}, {3, {3}}, {1, {1}}});
  const int32_t first = r.Sticky("t", 400, 6);
  CHECK(first == 6 % 4);
  CHECK(r.Sticky("t", 400, 1) == first);
  CHECK(r.Sticky("t", 400, 1) == first);  // 1200 bytes went to it now
  const int32_t second = r.Sticky("t", 400, 0);
  CHECK(second != first);  // moved on, never to the same partition
  std::set<int32_t> seen{first, second};
  for (uint32_t i = 0; i < 40; ++i) seen.insert(r.Sticky("t", 1000, i));
  CHECK(seen.size() == 4);  // every partition gets its turn

  // Partitions without a leader are passed over while any has one; the sticky one moves off a
  // partition whose leader went away.
  Routes gaps(1000);
  gaps.SetTopic("g", {{-1, {1}}, {2, {2}}, {-1, {3}}, {4, {4}}});
  std::set<int32_t> picked;
  for (uint32_t i = 0; i < 40; ++i) picked.insert(gaps.Sticky("g", 1000, i));
  CHECK(picked == std::set<int32_t>{1, 3});
  const int32_t now = gaps.Sticky("g", 10, 0);
  std::vector<PartitionRoute> lost{{1, {1}}, {2, {2}}, {3, {3}}, {4, {4}}};
  lost[static_cast<size_t>(now)].leader = -1;
  gaps.SetTopic("g", lost);
  CHECK(gaps.Sticky("g", 10, 0) != now);
  gaps.SetTopic("g", {{-1, {1}}, {-1, {2}}});  // none has one: any will do (the record waits)
  const int32_t any = gaps.Sticky("g", 10, 5);
  CHECK((any == 0 || any == 1));

  Routes one(1000);
  one.SetTopic("u", {{1, {1}}});
  for (uint32_t i = 0; i < 5; ++i) CHECK(one.Sticky("u", 5000, i) == 0);
  CHECK(one.Sticky("unknown", 10, 3) == 0);
}

}  // namespace
}  // namespace rdmq::client
