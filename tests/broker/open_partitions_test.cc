// Partitions are opened log.open.threads at a time: when a topic is created or gains
// partitions, and when the broker starts. One partition that cannot be opened refuses the
// topic whole and leaves nothing of it behind, touching nothing that was there; every
// partition a restart opens side by side comes back with its records.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "inproc_broker.h"
#include "rdmq/broker/broker.h"
#include "rdmq/client/admin.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/messages.h"
#include "support/test_util.h"

namespace rdmq::broker {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using protocol::WireError;
using test::PartitionDirs;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void Produce(const client::ClientOptions& c, const std::string& topic, int partitions, int round) {
  producer::ProducerConfig pc;
  pc.client = c;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  for (int i = 0; i < partitions; ++i) {
    auto md = (*p)->Send({.topic = topic,
                          .partition = i,
                          .value = "p" + std::to_string(i) + "-r" + std::to_string(round)})
                  .get();
    REQUIRE_OK(md);
    CHECK(md->offset == round);
  }
  REQUIRE_OK((*p)->Close(10s));
}

// Each partition holds "p<i>-r0" .. "p<i>-r<rounds-1>" at offsets 0.., and nothing else.
void CheckAll(const client::ClientOptions& c, const std::string& topic, int partitions, int rounds) {
  consumer::ConsumerConfig cc;
  cc.client = c;
  auto con = consumer::Consumer::Create(cc);
  REQUIRE_OK(con);
  std::vector<consumer::TopicPartition> all;
  for (int i = 0; i < partitions; ++i) all.push_back({topic, i});
  REQUIRE_OK((*con)->Assign(all));
  std::vector<int> next(static_cast<size_t>(partitions), 0);
  int seen = 0;
  const auto deadline = Clock::now() + 30s;
  while (seen < partitions * rounds && Clock::now() < deadline) {
    auto recs = (*con)->Poll(50ms);
    REQUIRE_OK(recs);
    for (const auto& r : *recs) {
      REQUIRE(r.partition >= 0);
      REQUIRE(r.partition < partitions);
      int& n = next[static_cast<size_t>(r.partition)];
      REQUIRE(r.offset == n);
      CHECK(r.value == "p" + std::to_string(r.partition) + "-r" + std::to_string(n));
      ++n;
      ++seen;
    }
  }
  CHECK(seen == partitions * rounds);
}

TEST_CASE("a partition that cannot be created refuses its topic whole, leaving what was in its way intact",
          "[broker][bad-input]") {
  const uint32_t threads = GENERATE(1u, 8u);
  INFO("log.open.threads=" << threads);
  rdmq::test::TempDir dir("rdmq-open-parts");
  BrokerConfig cfg = test::TestConfig(dir);
  cfg.log_open_threads = threads;
  test::Running r = test::Start(cfg);
  REQUIRE_OK(r.admin->CreateTopic("kept", {{"partitions", "2"}}));
  Produce(r.client, "kept", 2, 0);
  // A file where partition 37's directory goes: that partition cannot be made.
  const std::string in_the_way = dir.str() + "/topics/big-37";
  const std::string bytes = "an operator's file, not a partition";
  { std::ofstream(in_the_way, std::ios::binary) << bytes; }
  const std::vector<std::pair<std::string, std::string>> big = {
      {"partitions", "64"}, {"segment.bytes", "65536"}, {"max.message.bytes", "16384"}};
  auto made = r.admin->CreateTopic("big", big);
  REQUIRE_FALSE(made.ok());
  INFO(made.status().ToString());
  CHECK(made.status().is(WireError::kStorageError));
  CHECK(made.status().ToString().find("big-37") != std::string::npos);
  // Nothing of the topic is left, in the metadata or on disk, and the file is as it was.
  auto topics = r.admin->ListTopics();
  REQUIRE_OK(topics);
  REQUIRE(topics->size() == 1);
  CHECK((*topics)[0].name == "kept");
  CHECK(PartitionDirs(dir, "big") == 1);
  CHECK(std::filesystem::is_regular_file(in_the_way));
  CHECK(ReadAll(in_the_way) == bytes);

  // Growing a topic into the same obstacle fails the same way and keeps what the topic had.
  REQUIRE_OK(r.admin->CreateTopic("grow", {{"partitions", "4"}}));
  const std::string grow_way = dir.str() + "/topics/grow-21";
  { std::ofstream(grow_way, std::ios::binary) << bytes; }
  auto grown = r.admin->AlterTopic("grow", {{"partitions", "40"}});
  REQUIRE_FALSE(grown.ok());
  CHECK(grown.status().ToString().find("grow-21") != std::string::npos);
  CHECK(PartitionDirs(dir, "grow") == 5);  // its 4 partitions and the file
  CHECK(ReadAll(grow_way) == bytes);
  auto d = r.admin->DescribeTopic("grow");
  REQUIRE_OK(d);
  CHECK(d->partition_count() == 4);  // the metadata did not take the failed change
  Produce(r.client, "grow", 4, 0);

  // Out of the way, the topic is created in full, and the old topic still takes records.
  std::filesystem::remove(in_the_way);
  std::filesystem::remove(grow_way);
  grown = r.admin->AlterTopic("grow", {{"partitions", "40"}});
  REQUIRE_OK(grown);
  CHECK(grown->partition_count() == 40);
  CHECK(PartitionDirs(dir, "grow") == 40);
  Produce(r.client, "grow", 4, 1);
  CheckAll(r.client, "grow", 4, 2);
  auto again = r.admin->CreateTopic("big", big);
  REQUIRE_OK(again);
  CHECK(again->partition_count() == 64);
  CHECK(PartitionDirs(dir, "big") == 64);
  Produce(r.client, "big", 64, 0);
  Produce(r.client, "kept", 2, 1);
  CheckAll(r.client, "big", 64, 1);
  CheckAll(r.client, "kept", 2, 2);
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

TEST_CASE(
    "a restart opens many partitions side by side, of one topic or of many, and each comes back with its "
    "records",
    "[broker]") {
  const uint32_t threads = GENERATE(1u, 8u);
  INFO("log.open.threads=" << threads);
  rdmq::test::TempDir dir("rdmq-open-parts");
  BrokerConfig cfg = test::TestConfig(dir);
  cfg.log_open_threads = threads;
  constexpr int kParts = 48;
  constexpr int kSmall = 12;  // topics of one partition: a start opens them side by side too
  {
    test::Running r = test::Start(cfg);
    REQUIRE_OK(r.admin->CreateTopic("t", {{"partitions", std::to_string(kParts)},
                                          {"segment.bytes", "65536"},
                                          {"max.message.bytes", "16384"}}));
    REQUIRE_OK(r.admin->CreateTopic("u", {{"partitions", "3"}}));
    for (int k = 0; k < kSmall; ++k) {
      REQUIRE_OK(r.admin->CreateTopic("small" + std::to_string(k), {{"partitions", "1"}}));
      Produce(r.client, "small" + std::to_string(k), 1, 0);
    }
    Produce(r.client, "t", kParts, 0);
    Produce(r.client, "u", 3, 0);
    r.admin.reset();
    REQUIRE_OK(r.broker->Shutdown());
  }
  test::Running r = test::Start(cfg);
  auto d = r.admin->DescribeTopic("t");
  REQUIRE_OK(d);
  CHECK(d->partition_count() == kParts);
  Produce(r.client, "t", kParts, 1);
  CheckAll(r.client, "t", kParts, 2);
  CheckAll(r.client, "u", 3, 1);
  for (int k = 0; k < kSmall; ++k) CheckAll(r.client, "small" + std::to_string(k), 1, 1);
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

}  // namespace
}  // namespace rdmq::broker
