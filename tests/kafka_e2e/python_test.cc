// The Python Kafka clients against the Kafka listener: confluent-kafka-python (on librdkafka)
// and kafka-python (an independent implementation of the protocol), each producing and
// consuming in a group of two that a third member joins (tests/kafka_e2e/python_group.py).
#include <catch2/catch.hpp>

#include "cli/cli_fixture.h"

namespace rdmq::test {
namespace {

void RunClient(const std::string& client) {
  Fixture f({"--set", "group.initial.rebalance.delay.ms=200"});
  const std::string topic = "py-" + client;
  REQUIRE_RUN(f.Rdmq({"topic", "create", topic, "--partitions", "3"}), 0);
  // Debian's python3 (the packages' interpreter), whatever python3 is first on PATH.
  const RunResult r =
      Run({"/usr/bin/python3", std::string(RDMQ_SOURCE_DIR) + "/tests/kafka_e2e/python_group.py", "--client",
           client, "--bootstrap", f.kafka(), "--topic", topic, "--partitions", "3"},
          "", 240);
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.code == 0);
  CHECK(Contains(r.out, "client " + client + ": sent 3000, committed 3000"));
}

TEST_CASE("confluent-kafka-python produces and consumes in a group that a third member rebalances",
          "[e2e][kafka][python]") {
  RunClient("confluent");
}

TEST_CASE("kafka-python produces and consumes in a group that a third member rebalances",
          "[e2e][kafka][python]") {
  RunClient("kafka-python");
}

}  // namespace
}  // namespace rdmq::test
