// Topic config changes reach open partitions without a restart (AlterTopic): a broker in this
// process, an AdminClient and a Producer against it. segment.bytes sizes the next segment,
// retention.bytes / retention.ms let the housekeeper delete old segments, a lower
// max.message.bytes refuses a batch the old limit allowed.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "inproc_broker.h"
#include "rdmq/broker/broker.h"
#include "rdmq/client/admin.h"
#include "rdmq/common/clock.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/messages.h"
#include "support/test_util.h"

namespace rdmq::broker {
namespace {

using namespace std::chrono_literals;
using protocol::WireError;

using test::Running;

Running Start(const rdmq::test::TempDir& dir) {
  BrokerConfig cfg = test::TestConfig(dir);
  cfg.retention_check_interval_ms = 10;
  return test::Start(cfg);
}

std::unique_ptr<producer::Producer> MakeProducer(const client::ClientOptions& c) {
  producer::ProducerConfig pc;
  pc.client = c;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  return std::move(*p);
}

// Sends n records of `size` bytes to partition 0, stamped `ts` (-1: now), and waits for them.
void SendN(producer::Producer& p, const std::string& topic, int n, size_t size, int64_t ts = -1) {
  const std::string value(size, 'v');
  for (int i = 0; i < n; ++i) {
    REQUIRE_OK(p.Send({.topic = topic, .partition = 0, .value = value, .timestamp_ms = ts}, nullptr));
  }
  REQUIRE_OK(p.Flush(30s));
}

// The segment files of <topic>-0 and their sizes, by name (base offset order).
std::map<std::string, uint64_t> SegmentFiles(const rdmq::test::TempDir& dir, const std::string& topic) {
  std::map<std::string, uint64_t> out;
  for (const auto& e : std::filesystem::directory_iterator(dir.str() + "/topics/" + topic + "-0")) {
    if (e.path().extension() == ".seg") out[e.path().filename().string()] = e.file_size();
  }
  return out;
}

client::PartitionDescription Describe(client::AdminClient& admin, const std::string& topic) {
  auto d = admin.DescribeTopic(topic);
  REQUIRE_OK(d);
  REQUIRE(d->partitions.size() == 1);
  return d->partitions[0];
}

// Polls until the log start passes offset 0 (at most `limit`); returns the last description.
client::PartitionDescription WaitForRetention(client::AdminClient& admin, const std::string& topic,
                                              std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  client::PartitionDescription d = Describe(admin, topic);
  while (d.log_start_offset == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    d = Describe(admin, topic);
  }
  return d;
}

TEST_CASE("altered segment.bytes and max.message.bytes apply to a live partition", "[broker][alter]") {
  rdmq::test::TempDir dir("rdmq-alter");
  Running r = Start(dir);
  REQUIRE_OK(r.admin->CreateTopic("t", {{"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
  auto p = MakeProducer(r.client);
  // Under the old limit a 30000-byte record is accepted.
  SendN(*p, "t", 1, 30000);
  REQUIRE_OK(r.admin->AlterTopic("t", {{"segment.bytes", "65536"}, {"max.message.bytes", "16384"}}));

  // The producer still knows the old limit, so the batch reaches the broker, whose commit
  // validator refuses it by the new one.
  auto md = p->Send({.topic = "t", .partition = 0, .value = std::string(30000, 'b')}).get();
  REQUIRE_FALSE(md.ok());
  CHECK(md.status().is(WireError::kRecordTooLarge));
  // (Its Close would report that failure again; the destructor closes it.)
  p.reset();

  // The active segment keeps its 1 MiB; the segments after the next roll have the new size.
  auto files = SegmentFiles(dir, "t");
  REQUIRE(files.size() == 1);
  CHECK(files.begin()->second == 1048576u);
  auto fresh = MakeProducer(r.client);
  for (int i = 0; i < 40 && SegmentFiles(dir, "t").size() < 4; ++i) SendN(*fresh, "t", 100, 1000);
  files = SegmentFiles(dir, "t");
  REQUIRE(files.size() >= 4);
  auto it = files.begin();
  CHECK(it->second == 1048576u);
  for (++it; it != files.end(); ++it) {
    INFO(it->first);
    CHECK(it->second == 65536u);
  }
  REQUIRE_OK(fresh->Close(10s));
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

TEST_CASE("altered retention.bytes and retention.ms let the housekeeper delete old segments",
          "[broker][alter]") {
  rdmq::test::TempDir dir("rdmq-alter");
  Running r = Start(dir);
  REQUIRE_OK(r.admin->CreateTopic("b", {{"segment.bytes", "65536"}, {"max.message.bytes", "16384"}}));
  // Stamped an hour ago: the default retention.ms (7 days) keeps them.
  REQUIRE_OK(r.admin->CreateTopic("a", {{"segment.bytes", "65536"}, {"max.message.bytes", "16384"}}));
  auto p = MakeProducer(r.client);
  SendN(*p, "b", 600, 1000);  // about 10 segments
  SendN(*p, "a", 600, 1000, WallMillis().value() - 3'600'000);
  const size_t b_segments = SegmentFiles(dir, "b").size();
  const size_t a_segments = SegmentFiles(dir, "a").size();
  REQUIRE(b_segments >= 8);
  REQUIRE(a_segments >= 8);
  // Several retention checks (every 10 ms) pass without deleting anything.
  std::this_thread::sleep_for(200ms);
  CHECK(Describe(*r.admin, "b").log_start_offset == 0);
  CHECK(Describe(*r.admin, "a").log_start_offset == 0);

  // retention.bytes: at most 3 segments' worth stays (the active one included).
  REQUIRE_OK(r.admin->AlterTopic("b", {{"retention.bytes", "196608"}}));
  auto d = WaitForRetention(*r.admin, "b", 30s);
  CHECK(d.log_start_offset > 0);
  CHECK(d.segments <= 3);
  CHECK(SegmentFiles(dir, "b").size() <= 3);

  // retention.ms: a minute; every sealed segment is older, only the active one stays.
  REQUIRE_OK(r.admin->AlterTopic("a", {{"retention.ms", "60000"}}));
  d = WaitForRetention(*r.admin, "a", 30s);
  CHECK(d.log_start_offset > 0);
  CHECK(d.segments == 1);
  CHECK(d.high_watermark == 600);
  CHECK(Describe(*r.admin, "b").high_watermark == 600);
  REQUIRE_OK(p->Close(10s));
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

}  // namespace
}  // namespace rdmq::broker
