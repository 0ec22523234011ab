// Compression end to end: a broker in this process, a Producer with compression.type set and a
// Consumer reading back. Every codec, exclusive and shared partitions, shm and tcp: the records
// come back identical (offsets, keys, values, headers, timestamps), and the log holds the batches
// compressed (read from the segment file after the broker stopped). Batches that do not shrink
// are sent plain.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "inproc_broker.h"
#include "rdmq/broker/broker.h"
#include "rdmq/client/admin.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/record_batch.h"
#include "support/test_util.h"

namespace rdmq::broker {
namespace {

using namespace std::chrono_literals;
using compression::Codec;
using Clock = std::chrono::steady_clock;

using test::Running;

Running Start(const rdmq::test::TempDir& dir, const std::string& fabric) {
  return test::Start(test::TestConfig(dir, fabric));
}

struct Want {
  std::string key, value, header;
  int64_t ts;
};

// `n` records: keys and values with repeated text (they compress), every third value null,
// a header each, timestamps from 1700000000000 in steps of 3 ms.
std::vector<Want> Records(int n, bool compressible, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Want> w;
  for (int i = 0; i < n; ++i) {
    std::string value;
    if (compressible) {
      value = "{\"order\": " + std::to_string(i) + ", \"item\": \"widget-" + std::to_string(i % 13) +
              "\", \"note\": \"" + std::string(40 + i % 60, 'n') + "\"}";
    } else {
      value.resize(150);
      for (auto& c : value) c = static_cast<char>(rng());
    }
    w.push_back({"key-" + std::to_string(i % 17), value, "h" + std::to_string(i), 1700000000000 + 3 * i});
  }
  return w;
}

// Sends `recs` to partition 0 in batches of many records, or (one_by_one) one record per batch.
void Produce(const client::ClientOptions& c, const std::string& topic, Codec codec,
             producer::PartitionMode mode, const std::vector<Want>& recs, bool one_by_one = false) {
  producer::ProducerConfig pc;
  pc.client = c;
  pc.compression = codec;
  pc.mode = mode;
  pc.batch_size = 16384;
  pc.linger = one_by_one ? 0ms : 2ms;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  for (size_t i = 0; i < recs.size(); ++i) {
    const client::Header h[] = {{"trace", recs[i].header}};
    producer::ProducerRecord r{
        .topic = topic, .partition = 0, .key = recs[i].key, .headers = h, .timestamp_ms = recs[i].ts};
    if (i % 3 != 2) r.value = recs[i].value;
    if (one_by_one) {
      REQUIRE_OK((*p)->Send(r).get());
    } else {
      REQUIRE_OK((*p)->Send(r, nullptr));
    }
  }
  REQUIRE_OK((*p)->Flush(30s));
  REQUIRE_OK((*p)->Close(10s));
}

void CheckConsumed(const client::ClientOptions& c, const std::string& topic, const std::vector<Want>& want) {
  consumer::ConsumerConfig cc;
  cc.client = c;
  auto con = consumer::Consumer::Create(cc);
  REQUIRE_OK(con);
  REQUIRE_OK((*con)->Assign({{topic, 0}}));
  size_t next = 0;
  const auto deadline = Clock::now() + 20s;
  while (next < want.size() && Clock::now() < deadline) {
    auto recs = (*con)->Poll(50ms);
    REQUIRE_OK(recs);
    for (const auto& r : *recs) {
      REQUIRE(next < want.size());
      const Want& w = want[next];
      REQUIRE(r.offset == static_cast<int64_t>(next));
      CHECK(r.key == w.key);
      if (next % 3 == 2) {
        CHECK_FALSE(r.value.has_value());
      } else {
        CHECK(r.value == w.value);
      }
      CHECK(r.timestamp_ms == w.ts);
      REQUIRE(r.headers.size() == 1);
      CHECK(r.headers[0].key == "trace");
      CHECK(r.headers[0].value == w.header);
      ++next;
    }
  }
  CHECK(next == want.size());
  auto more = (*con)->Poll(50ms);
  REQUIRE_OK(more);
  CHECK(more->empty());
}

// (codec, records) of every batch in partition 0 of `topic`, read from its segment files.
std::vector<std::pair<int, int>> StoredBatches(const rdmq::test::TempDir& dir, const std::string& topic) {
  std::vector<std::pair<int, int>> batches;
  for (const auto& e : std::filesystem::directory_iterator(dir.str() + "/topics/" + topic + "-0")) {
    if (e.path().extension() != ".seg") continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto data = coding::AsBytes(file).subspan(storage::format::kSegmentHeaderSize);
    storage::BatchScanner sc(data, storage::Validation::kRecords);  // stops at the zeros after the end
    storage::BatchView b;
    while (sc.Next(&b)) {
      if (!b.header.is_control()) batches.emplace_back(b.header.compression(), b.header.record_count);
    }
  }
  return batches;
}

void RoundTrip(const std::string& fabric) {
  rdmq::test::TempDir dir("rdmq-compress");
  const Codec codecs[] = {Codec::kGzip, Codec::kSnappy, Codec::kLz4, Codec::kZstd};
  const int per_topic = rdmq::test::Trials(3000, 600);  // records per topic
  std::vector<std::pair<std::string, Codec>> topics;
  {
    Running r = Start(dir, fabric);
    for (Codec codec : codecs) {
      for (auto mode : {producer::PartitionMode::kExclusive, producer::PartitionMode::kShared}) {
        const std::string topic = std::string(compression::CodecName(codec)) +
                                  (mode == producer::PartitionMode::kShared ? "-shared" : "-excl");
        INFO(topic << " over " << fabric);
        REQUIRE_OK(r.admin->CreateTopic(topic, {{"partitions", "1"}}));
        const auto recs = Records(per_topic, true, 1);
        Produce(r.client, topic, codec, mode, recs);
        CheckConsumed(r.client, topic, recs);
        topics.emplace_back(topic, codec);
      }
    }
    // Batches that compression does not shrink (one record of random bytes each) are sent plain.
    REQUIRE_OK(r.admin->CreateTopic("random", {{"partitions", "1"}}));
    const auto noise = Records(50, false, 2);
    Produce(r.client, "random", Codec::kZstd, producer::PartitionMode::kExclusive, noise, true);
    CheckConsumed(r.client, "random", noise);
    topics.emplace_back("random", Codec::kNone);
    REQUIRE_OK(r.broker->Shutdown());
  }
  for (const auto& [topic, codec] : topics) {
    INFO(topic);
    int records = 0;
    int compressed = 0;
    for (const auto& [c, n] : StoredBatches(dir, topic)) {
      records += n;
      if (c == static_cast<int>(codec)) {
        ++compressed;
      } else {  // a batch too small to shrink (a lone record sealed by linger) stays plain
        CHECK(c == 0);
        CHECK(n <= 2);
      }
    }
    CHECK(records == (topic == "random" ? 50 : per_topic));
    CHECK(compressed >= (codec == Codec::kNone ? 50 : 3));
  }
}

TEST_CASE("every codec: produced compressed, stored compressed, consumed identical (shm)",
          "[broker][compression]") {
  RoundTrip("shm");
}

TEST_CASE("every codec: produced compressed, stored compressed, consumed identical (tcp)",
          "[broker][compression]") {
  RoundTrip("tcp");
}

}  // namespace
}  // namespace rdmq::broker
