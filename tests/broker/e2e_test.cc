// End-to-end tests: a real rdmq-broker process, producers and consumers in this process (and in
// child processes where a test kills them), on the shm and tcp fabrics.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "e2e_values.h"
#include "rdmq/client/admin.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/partitioner.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::test {
namespace {

using namespace std::chrono_literals;
using consumer::Consumer;
using consumer::ConsumerConfig;
using producer::Producer;
using producer::ProducerConfig;

#define E2E_BOTH(name, title, tags)                                                  \
  static void name(const std::string& fabric);                                      \
  TEST_CASE(title " (shm)", tags "[shm]") { name("shm"); }                          \
  TEST_CASE(title " (tcp)", tags "[tcp]") { name("tcp"); }                          \
  static void name(const std::string& fabric)

#define START_BROKER(var, dir, fabric, ...)                     \
  BrokerProcess var((dir / "data").string(), fabric, ##__VA_ARGS__); \
  {                                                             \
    std::string why_;                                           \
    const bool started_ = var.Start(&why_);                     \
    INFO(why_);                                                 \
    REQUIRE(started_);                                          \
  }

std::unique_ptr<client::AdminClient> Admin(const BrokerProcess& b) {
  auto a = client::AdminClient::Connect(b.Options());
  REQUIRE_OK(a);
  return std::move(*a);
}

ProducerConfig PConfig(const BrokerProcess& b) {
  ProducerConfig c;
  c.client = b.Options();
  return c;
}

producer::ProducerRecord MakeRecord(std::string_view topic, int32_t partition, std::optional<std::string_view> key,
                            std::optional<std::string_view> value) {
  producer::ProducerRecord r;
  r.topic = topic;
  r.partition = partition;
  r.key = key;
  r.value = value;
  return r;
}

ConsumerConfig CConfig(const BrokerProcess& b) {
  ConsumerConfig c;
  c.client = b.Options();
  return c;
}


// ---------------------------------------------------------------------------------------------
// Shared helpers for the multi-process tests.

struct Rec {
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<std::string> key;
  std::string value;
  std::string topic;
};

// Runs a consumer over `tps` until it holds `want` records, `timeout` passes or `stop` is set.
struct ConsumeResult {
  Status status;
  std::vector<Rec> recs;
};
ConsumeResult ConsumeUntil(ConsumerConfig cfg, std::vector<client::TopicPartition> tps, size_t want,
                           std::chrono::milliseconds timeout, const std::atomic<bool>* stop = nullptr) {
  ConsumeResult out;
  auto c = Consumer::Create(cfg);
  if (!c.ok()) {
    out.status = c.status();
    return out;
  }
  if (Status s = (*c)->Assign(tps); !s.ok()) {
    out.status = s;
    return out;
  }
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (out.recs.size() < want && std::chrono::steady_clock::now() < end && !(stop && stop->load())) {
    auto recs = (*c)->Poll(50ms);
    if (!recs.ok()) {
      out.status = recs.status();
      return out;
    }
    for (const auto& r : *recs) {
      Rec x;
      x.topic = std::string(r.topic);
      x.partition = r.partition;
      x.offset = r.offset;
      if (r.key) x.key = std::string(*r.key);
      x.value = r.value ? std::string(*r.value) : std::string();
      out.recs.push_back(std::move(x));
    }
  }
  return out;
}

struct PeerOutput {
  std::vector<std::tuple<int32_t, int64_t, long>> acks;  // partition, offset, index
  std::vector<std::string> fails;
  bool done = false;
  std::string done_status;
};
PeerOutput ReadPeer(const std::string& path) {
  PeerOutput o;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "ack") {
      int32_t p;
      int64_t off;
      long i;
      if (ls >> p >> off >> i) o.acks.emplace_back(p, off, i);
    } else if (word == "fail") {
      o.fails.push_back(line);
    } else if (word == "done") {
      o.done = true;
      std::getline(ls, o.done_status);
    }
  }
  return o;
}

std::vector<std::string> PeerArgs(const BrokerProcess& b, const std::string& topic, const std::string& tag, long count,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> v = {BinDir() + "/rdmq_e2e_peer", "produce", b.control(), topic, tag,
                                std::to_string(count)};
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

// Checks a consumer's records: values intact, offsets increasing per partition, each producer's
// records in order per partition; returns how many of each tag it saw, by index.
std::map<std::string, std::map<long, Rec>> Verify(const std::vector<Rec>& recs) {
  std::map<std::string, std::map<long, Rec>> by_tag;
  std::map<std::pair<std::string, int32_t>, int64_t> last_offset;
  std::map<std::tuple<std::string, int32_t, std::string>, long> last_index;
  for (const auto& r : recs) {
    std::string tag;
    long index = -1;
    INFO("topic " << r.topic << " partition " << r.partition << " offset " << r.offset);
    REQUIRE(CheckValue(r.value, &tag, &index));
    auto lo = last_offset.find({r.topic, r.partition});
    if (lo != last_offset.end()) REQUIRE(r.offset > lo->second);
    last_offset[{r.topic, r.partition}] = r.offset;
    auto li = last_index.find({r.topic, r.partition, tag});
    if (li != last_index.end()) REQUIRE(index > li->second);  // per-partition order kept
    last_index[{r.topic, r.partition, tag}] = index;
    REQUIRE(by_tag[tag].count(index) == 0);  // no duplicate
    by_tag[tag][index] = r;
  }
  return by_tag;
}

// Reads from `c` until `want` records arrived or `timeout` passed; returns value strings by
// partition in offset order, checking offsets increase without gaps from `from`.
std::map<int32_t, std::vector<std::pair<int64_t, std::string>>> Drain(Consumer& c, size_t want,
                                                                      std::chrono::milliseconds timeout) {
  std::map<int32_t, std::vector<std::pair<int64_t, std::string>>> got;
  size_t n = 0;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (n < want && std::chrono::steady_clock::now() < end) {
    auto recs = c.Poll(100ms);
    REQUIRE_OK(recs);
    for (const auto& r : *recs) {
      got[r.partition].emplace_back(r.offset, r.value ? std::string(*r.value) : std::string("<null>"));
      ++n;
    }
  }
  return got;
}

E2E_BOTH(ProduceConsumeBasic, "one producer and one consumer see the same records in order", "[e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric);
  auto admin = Admin(broker);
  auto t = admin->CreateTopic("orders", {{"partitions", "1"}});
  REQUIRE_OK(t);
  CHECK(t->name == "orders");

  auto p = Producer::Create(PConfig(broker));
  REQUIRE_OK(p);
  const int n = 1000;
  std::vector<producer::SendFuture> futs;
  for (int i = 0; i < n; ++i) {
    const std::string v = "value-" + std::to_string(i);
    futs.push_back((*p)->Send(MakeRecord("orders", 0, std::nullopt, v)));
  }
  REQUIRE_OK((*p)->Flush(10s));
  for (int i = 0; i < n; ++i) {
    auto md = futs[static_cast<size_t>(i)].get();
    REQUIRE_OK(md);
    CHECK(md->offset == i);
    CHECK(md->partition == 0);
  }

  auto c = Consumer::Create(CConfig(broker));
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->Assign({{"orders", 0}}));
  auto got = Drain(**c, n, 10s);
  REQUIRE(got[0].size() == static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    CHECK(got[0][static_cast<size_t>(i)].first == i);
    CHECK(got[0][static_cast<size_t>(i)].second == "value-" + std::to_string(i));
  }
  auto pos = (*c)->Position({"orders", 0});
  REQUIRE_OK(pos);
  CHECK(*pos == n);
  REQUIRE_OK((*p)->Close(10s));
  CHECK(broker.Stop() == 0);
}


E2E_BOTH(ManyProducersAndConsumers,
         "exclusive and shared producers in other processes, several consumers: nothing lost, duplicated or "
         "reordered", "[e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric);
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic("ex", {{"partitions", "2"}, {"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
  REQUIRE_OK(admin->CreateTopic("sh", {{"partitions", "2"}, {"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
  const long n = Trials(3000, 300);
  const std::vector<client::TopicPartition> ex = {{"ex", 0}, {"ex", 1}}, sh = {{"sh", 0}, {"sh", 1}};
  std::vector<client::TopicPartition> all = ex;
  all.insert(all.end(), sh.begin(), sh.end());
  // Consumers first, so they read while the producers write.
  ConsumeResult r1, r2, r3;
  std::thread c1([&] { r1 = ConsumeUntil(CConfig(broker), ex, 2 * n, 120s); });
  std::thread c2([&] { r2 = ConsumeUntil(CConfig(broker), sh, 2 * n, 120s); });
  std::thread c3([&] { r3 = ConsumeUntil(CConfig(broker), all, 4 * n, 120s); });
  const std::string seed = "seed=" + std::to_string(TestSeed() % 100000);
  Child a(PeerArgs(broker, "ex", "A", n, {"partition=0", "min=1", "max=3000", seed}), (dir / "A.out").string());
  Child b(PeerArgs(broker, "ex", "B", n, {"partition=1", "min=1", "max=3000", seed, "linger.ms=0.2"}),
          (dir / "B.out").string());
  Child c(PeerArgs(broker, "sh", "C", n, {"keyed=1", "partition.mode=shared", "min=1", "max=2000", seed}),
          (dir / "C.out").string());
  Child d(PeerArgs(broker, "sh", "D", n, {"keyed=1", "partition.mode=shared", "min=1", "max=2000", seed,
                                          "enable.idempotence=false"}),
          (dir / "D.out").string());
  for (Child* ch : {&a, &b, &c, &d}) {
    REQUIRE(ch->WaitFor(120s));
    CHECK(WIFEXITED(ch->status()));
    CHECK(WEXITSTATUS(ch->status()) == 0);
  }
  c1.join();
  c2.join();
  c3.join();
  REQUIRE_OK(r1.status);
  REQUIRE_OK(r2.status);
  REQUIRE_OK(r3.status);
  std::map<std::string, PeerOutput> out;
  for (const char* tag : {"A", "B", "C", "D"}) {
    out[tag] = ReadPeer((dir / (std::string(tag) + ".out")).string());
    INFO("producer " << tag << " failures: " << out[tag].fails.size());
    CHECK(out[tag].done);
    CHECK(out[tag].fails.empty());
    CHECK(out[tag].acks.size() == static_cast<size_t>(n));
  }
  auto v1 = Verify(r1.recs), v2 = Verify(r2.recs), v3 = Verify(r3.recs);
  CHECK(r1.recs.size() == static_cast<size_t>(2 * n));
  CHECK(r2.recs.size() == static_cast<size_t>(2 * n));
  CHECK(r3.recs.size() == static_cast<size_t>(4 * n));
  for (const char* tag : {"A", "B", "C", "D"}) {
    auto& seen = v3[tag];
    CHECK(seen.size() == static_cast<size_t>(n));
    CHECK((std::string(tag) < "C" ? v1[tag] : v2[tag]).size() == static_cast<size_t>(n));
    // Every ack names the partition and offset where the record is.
    for (const auto& [p, off, i] : out[tag].acks) {
      auto it = seen.find(i);
      REQUIRE(it != seen.end());
      CHECK(it->second.partition == p);
      CHECK(it->second.offset == off);
      if (std::string(tag) >= "C") {
        REQUIRE(it->second.key.has_value());
        CHECK(p == producer::PartitionForKey(*it->second.key, 2));
      }
    }
  }
  // The exclusive producers' partitions hold no gaps (their offsets are their own).
  for (const char* tag : {"A", "B"}) {
    int64_t expect = 0;
    for (const auto& [i, rec] : v1[tag]) CHECK(rec.offset == expect++);
  }
  CHECK(broker.Stop() == 0);
}

TEST_CASE("keys land on the partition Kafka's murmur2 partitioner picks", "[e2e][shm]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic("keys", {{"partitions", "50"}, {"segment.bytes", "65536"}, {"max.message.bytes", "16384"}}));
  auto p = Producer::Create(PConfig(broker));
  REQUIRE_OK(p);
  // Expected partitions from Kafka's own murmur2 vectors: toPositive(murmur2(key)) % 50.
  const std::vector<std::pair<std::string, int32_t>> keys = {{"foobar", 16}, {"21", 40}, {"abc", 7}, {"", 31}};
  for (const auto& [k, want] : keys) {
    auto md = (*p)->Send(MakeRecord("keys", -1, k, "v-" + k)).get();
    REQUIRE_OK(md);
    CHECK(md->partition == want);
  }
  REQUIRE_OK((*p)->Close(10s));
  std::vector<client::TopicPartition> tps;
  for (int i = 0; i < 50; ++i) tps.push_back({"keys", i});
  auto got = ConsumeUntil(CConfig(broker), tps, keys.size(), 20s);
  REQUIRE_OK(got.status);
  REQUIRE(got.recs.size() == keys.size());
  for (const auto& r : got.recs) {
    REQUIRE(r.key.has_value());
    for (const auto& [k, want] : keys) {
      if (k == *r.key) CHECK(r.partition == want);
    }
  }
  CHECK(broker.Stop() == 0);
}

}  // namespace
}  // namespace rdmq::test
