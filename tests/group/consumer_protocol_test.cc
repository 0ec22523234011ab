// Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment bytes: hand-written layouts of
// each version, round trips, newer versions, and malformed input.
#include "rdmq/group/consumer_protocol.h"

#include <catch2/catch.hpp>
#include <string>

#include "rdmq/group/errors.h"

namespace rdmq::group {
namespace {

std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

TEST_CASE("consumer protocol: a version 0 subscription byte by byte", "[group][consumer-protocol]") {
  // version 0, topics ["ab", "c"], user_data null
  const std::string b = Bytes({0, 0, 0, 0, 0, 2, 0, 2, 'a', 'b', 0, 1, 'c', 0xff, 0xff, 0xff, 0xff});
  auto s = ParseConsumerSubscription(b);
  REQUIRE(s.ok());
  CHECK(s->version == 0);
  CHECK(s->topics == std::vector<std::string>{"ab", "c"});
  CHECK_FALSE(s->user_data);
  CHECK(s->owned.empty());
  CHECK(s->generation_id == -1);
  CHECK(EncodeConsumerSubscription(*s, 0) == b);
}

TEST_CASE("consumer protocol: versions 1 to 3 add owned partitions, generation and rack",
          "[group][consumer-protocol]") {
  // version 3: topics ["t"], user_data "u", owned [t: 0, 2], generation 7, rack "r1"
  const std::string b = Bytes({0, 3, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 'u', 0, 0, 0, 1, 0,   1,  't',
                               0, 0, 0, 2, 0, 0, 0, 0, 0,   0, 0, 2, 0, 0,   0, 7, 0, 2, 'r', '1'});
  auto s = ParseConsumerSubscription(b);
  REQUIRE(s.ok());
  CHECK(s->version == 3);
  CHECK(s->topics == std::vector<std::string>{"t"});
  CHECK(s->user_data == std::optional<std::string>("u"));
  CHECK(s->owned == std::vector<TopicPartition>{{"t", 0}, {"t", 2}});
  CHECK(s->generation_id == 7);
  CHECK(s->rack_id == std::optional<std::string>("r1"));
  CHECK(EncodeConsumerSubscription(*s, 3) == b);
  for (int16_t v = 0; v <= 3; ++v) {
    INFO("version " << v);
    auto again = ParseConsumerSubscription(EncodeConsumerSubscription(*s, v));
    REQUIRE(again.ok());
    CHECK(again->topics == s->topics);
    CHECK(again->user_data == s->user_data);
    CHECK(again->owned == (v >= 1 ? s->owned : std::vector<TopicPartition>{}));
    CHECK(again->generation_id == (v >= 2 ? 7 : -1));
    CHECK(again->rack_id == (v >= 3 ? s->rack_id : std::nullopt));
  }
}

TEST_CASE("consumer protocol: an assignment byte by byte", "[group][consumer-protocol]") {
  // version 1: [a: 0, 1], [b: 5], user_data empty (not null)
  const std::string b = Bytes({0, 1, 0, 0, 0, 2,   0, 1, 'a', 0, 0, 0, 2, 0, 0, 0, 0, 0,
                               0, 0, 1, 0, 1, 'b', 0, 0, 0,   1, 0, 0, 0, 5, 0, 0, 0, 0});
  auto a = ParseConsumerAssignment(b);
  REQUIRE(a.ok());
  CHECK(a->version == 1);
  CHECK(a->partitions == std::vector<TopicPartition>{{"a", 0}, {"a", 1}, {"b", 5}});
  CHECK(a->user_data == std::optional<std::string>(""));
  CHECK(EncodeConsumerAssignment(*a, 1) == b);
}

TEST_CASE("consumer protocol: a newer version is read as version 3, extra fields ignored",
          "[group][consumer-protocol]") {
  ConsumerSubscription s;
  s.topics = {"x", "y"};
  s.owned = {{"x", 1}};
  s.generation_id = 4;
  std::string b = EncodeConsumerSubscription(s, 3);
  b[1] = 9;             // version 9
  b += "future-bytes";  // fields a later version appended
  auto p = ParseConsumerSubscription(b);
  REQUIRE(p.ok());
  CHECK(p->version == 9);
  CHECK(p->topics == s.topics);
  CHECK(p->owned == s.owned);
  CHECK(p->generation_id == 4);

  ConsumerAssignment a;
  a.partitions = {{"x", 0}};
  std::string ab = EncodeConsumerAssignment(a, 3) + "more";
  ab[1] = 5;
  auto pa = ParseConsumerAssignment(ab);
  REQUIRE(pa.ok());
  CHECK(pa->partitions == a.partitions);
}

TEST_CASE("consumer protocol: malformed bytes are refused, naming the field", "[group][consumer-protocol]") {
  ConsumerSubscription s;
  s.topics = {"orders", "logs"};
  s.user_data = "abc";
  s.owned = {{"orders", 0}, {"orders", 3}};
  s.rack_id = "rack";
  const std::string full = EncodeConsumerSubscription(s, 3);
  // Every truncation fails cleanly.
  for (size_t n = 0; n < full.size(); ++n) {
    INFO("first " << n << " bytes");
    auto r = ParseConsumerSubscription(full.substr(0, n));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().is(GroupErrc::kMalformedConsumerProtocol));
  }
  ConsumerAssignment a;
  a.partitions = {{"orders", 0}, {"logs", 1}};
  const std::string fa = EncodeConsumerAssignment(a, 0);
  for (size_t n = 0; n < fa.size(); ++n) CHECK_FALSE(ParseConsumerAssignment(fa.substr(0, n)).ok());

  // Counts and lengths the input cannot hold.
  auto huge = ParseConsumerSubscription(Bytes({0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 1, 'a'}));
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().ToString().find("subscription topics") != std::string::npos);
  CHECK_FALSE(ParseConsumerSubscription(Bytes({0, 0, 0xff, 0xff, 0xff, 0xff})).ok());  // null topics
  CHECK_FALSE(ParseConsumerSubscription(Bytes({0xff, 0xff, 0, 0, 0, 0})).ok());        // version -1
  CHECK_FALSE(ParseConsumerSubscription(Bytes({0, 0, 0, 0, 0, 1, 0xff, 0xff})).ok());  // null topic name
  CHECK_FALSE(ParseConsumerSubscription(Bytes({0, 0, 0, 0, 0, 0, 0x7f, 0, 0, 0})).ok());
  auto user = ParseConsumerAssignment(Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 'x'}));
  REQUIRE_FALSE(user.ok());
  CHECK(user.status().ToString().find("assignment user_data") != std::string::npos);
  // A topic name longer than Kafka allows (249 bytes) is refused.
  ConsumerAssignment longname;
  longname.partitions = {{std::string(250, 'x'), 0}};
  CHECK_FALSE(ParseConsumerAssignment(EncodeConsumerAssignment(longname, 0)).ok());
}

}  // namespace
}  // namespace rdmq::group
