// The znodes' JSON (docs/replication.md, "ZooKeeper layout"): what rdmq writes reads back the
// same, and anything else is refused naming the znode and the fault.
#include "rdmq/cluster/model.h"

#include <catch2/catch.hpp>

#include "support/test_util.h"

namespace rdmq::cluster {
namespace {

TEST_CASE("cluster model: the znodes' JSON as documented, read back the same", "[cluster]") {
  const BrokerInfo b{2, "tcp:10.0.0.2:9192", "tcp:10.0.0.2:9193", "10.0.0.2:9092", "tcp"};
  CHECK(
      EncodeBroker(b) ==
      R"({"control":"tcp:10.0.0.2:9192","data":"tcp:10.0.0.2:9193","fabric":"tcp","id":2,"kafka":"10.0.0.2:9092","version":1})");
  auto b2 = DecodeBroker(EncodeBroker(b), "/rdmq/brokers/ids/2");
  REQUIRE_OK(b2);
  CHECK(*b2 == b);

  TopicAssignment t{"orders",
                    7,
                    1700000000000,
                    {{"partitions", "3"}, {"retention.ms", "-1"}},
                    {{1, 2, 3}, {2, 3, 1}, {3, 1, 2}},
                    {}};
  auto t2 = DecodeTopic(EncodeTopic(t), "orders", "/rdmq/topics/orders");
  REQUIRE_OK(t2);
  CHECK(*t2 == t);
  CHECK(EncodeTopic(t).find("reassigning") == std::string::npos);
  // A partition being moved: its target beside the replicas (the new ones, then the old).
  t.reassigning[1] = {4, 3};
  t.replicas = {{1, 2}, {4, 3, 2}, {3, 1}};
  auto t3 = DecodeTopic(EncodeTopic(t), "orders", "/rdmq/topics/orders");
  REQUIRE_OK(t3);
  CHECK(*t3 == t);

  PartitionState s{2, 4, {2, 3}, 9, -1};
  CHECK(EncodeState(s) == R"({"controller_epoch":9,"isr":[2,3],"leader":2,"leader_epoch":4,"version":1})");
  auto s2 = DecodeState(EncodeState(s), "state");
  REQUIRE_OK(s2);
  CHECK(*s2 == s);
  CHECK(s2->InIsr(3));
  CHECK_FALSE(s2->InIsr(1));
  const PartitionState offline{kNoLeader, 5, {1}, 9, -1};
  CHECK(DecodeState(EncodeState(offline), "s")->leader == kNoLeader);
  auto c = DecodeController(EncodeController(3, 12), "c");
  REQUIRE_OK(c);
  CHECK(*c == std::pair<BrokerId, int32_t>(3, 12));
}

TEST_CASE("cluster model: znodes rdmq did not write are refused, naming the znode and why", "[cluster]") {
  const auto refused = [](const Status& s, const std::string& says) {
    INFO(s.ToString());
    CHECK(s.is(ClusterErrc::kBadZnode));
    CHECK(s.is(Errc::kCorruption));
    CHECK(s.ToString().find(says) != std::string::npos);
  };
  refused(DecodeState("", "/p/state").status(), "/p/state: not a JSON object");
  refused(DecodeState("[1]", "s").status(), "not a JSON object");
  refused(DecodeState(R"({"version":2,"leader":1})", "s").status(), "\"version\": 1");
  refused(DecodeState(R"({"version":1,"leader":1,"leader_epoch":0,"isr":[2],"controller_epoch":0})", "s")
              .status(),
          "the leader is not in the ISR");
  refused(DecodeState(R"({"version":1,"leader":1,"leader_epoch":0,"isr":[1,1],"controller_epoch":0})", "s")
              .status(),
          "names broker 1 twice");
  refused(DecodeState(R"({"version":1,"leader":-2,"leader_epoch":0,"isr":[],"controller_epoch":0})", "s")
              .status(),
          "\"leader\" = -2");
  refused(DecodeState(R"({"version":1,"leader":1,"leader_epoch":-1,"isr":[1],"controller_epoch":0})", "s")
              .status(),
          "\"leader_epoch\"");
  refused(DecodeTopic(R"({"version":1,"id":1,"created_ms":0,"config":{},"replicas":[]})", "t", "t").status(),
          "non-empty array");
  refused(DecodeTopic(R"({"version":1,"id":1,"created_ms":0,"config":{},"replicas":[[1,2],[1]]})", "t", "t")
              .status(),
          "different numbers of replicas");
  const std::string head = R"({"version":1,"id":1,"created_ms":0,"config":{},"replicas":[[1,2],[3,1,2]],)";
  refused(DecodeTopic(head + R"("reassigning":[{"partition":1,"replicas":[3,4]}]})", "t", "t").status(),
          "broker 4 is not among the partition's replicas");
  refused(DecodeTopic(head + R"("reassigning":[{"partition":2,"replicas":[3,1]}]})", "t", "t").status(),
          "\"partition\"");
  refused(DecodeTopic(head + R"("reassigning":[{"partition":1,"replicas":[3]}]})", "t", "t").status(),
          "different numbers of replicas");
  refused(DecodeTopic(
              head + R"("reassigning":[{"partition":1,"replicas":[3,1]},{"partition":1,"replicas":[3,2]}]})",
              "t", "t")
              .status(),
          "reassigned twice");
  refused(DecodeTopic(head + R"("reassigning":{"1":[3,1]}})", "t", "t").status(), "is not an array");
  CHECK(DecodeTopic(head + R"("reassigning":[{"partition":1,"replicas":[3,1]}]})", "t", "t").ok());
  refused(DecodeTopic(R"({"version":1,"id":1,"created_ms":0,"config":{"a":1},"replicas":[[1]]})", "t", "t")
              .status(),
          "config a is not a string");
  refused(
      DecodeTopic(R"({"version":1,"id":0,"created_ms":0,"config":{},"replicas":[[1]]})", "t", "t").status(),
      "\"id\"");
  refused(
      DecodeBroker(R"({"version":1,"id":1,"control":"","data":"x","kafka":"","fabric":"tcp"})", "b").status(),
      "without control or data");
  refused(DecodeController(R"({"version":1,"broker":"one","epoch":1})", "c").status(),
          "\"broker\" is not an integer");
}

}  // namespace
}  // namespace rdmq::cluster
