// End-to-end tests: a real rdmq-broker process, producers and consumers in this process (and in
// child processes where a test kills them), on the shm and tcp fabrics.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "e2e_values.h"
#include "rdmq/client/admin.h"
#include "rdmq/client/connection.h"
#include "rdmq/common/clock.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/partitioner.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/messages.h"
#include "support/http_get.h"

namespace rdmq::test {
namespace {

using namespace std::chrono_literals;
using consumer::Consumer;
using consumer::ConsumerConfig;
using producer::Producer;
using producer::ProducerConfig;

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

producer::ProducerRecord MakeRecord(std::string_view topic, int32_t partition,
                                    std::optional<std::string_view> key,
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

std::vector<std::string> PeerArgs(const BrokerProcess& b, const std::string& topic, const std::string& tag,
                                  long count, std::vector<std::string> extra = {}) {
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
         "reordered",
         "[e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric);
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic(
      "ex", {{"partitions", "2"}, {"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
  REQUIRE_OK(admin->CreateTopic(
      "sh", {{"partitions", "2"}, {"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
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
  Child a(PeerArgs(broker, "ex", "A", n, {"partition=0", "min=1", "max=3000", seed}),
          (dir / "A.out").string());
  Child b(PeerArgs(broker, "ex", "B", n, {"partition=1", "min=1", "max=3000", seed, "linger.ms=0.2"}),
          (dir / "B.out").string());
  Child c(PeerArgs(broker, "sh", "C", n, {"keyed=1", "partition.mode=shared", "min=1", "max=2000", seed}),
          (dir / "C.out").string());
  Child d(
      PeerArgs(broker, "sh", "D", n,
               {"keyed=1", "partition.mode=shared", "min=1", "max=2000", seed, "enable.idempotence=false"}),
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

#ifndef RDMQ_E2E_VERBS
TEST_CASE("keys land on the partition Kafka's murmur2 partitioner picks", "[e2e][shm]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic(
      "keys", {{"partitions", "50"}, {"segment.bytes", "65536"}, {"max.message.bytes", "16384"}}));
  auto p = Producer::Create(PConfig(broker));
  REQUIRE_OK(p);
  // Expected partitions from Kafka's own murmur2 vectors: toPositive(murmur2(key)) % 50.
  const std::vector<std::pair<std::string, int32_t>> keys = {
      {"foobar", 16}, {"21", 40}, {"abc", 7}, {"", 31}};
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
#endif

// Waits until `path` holds at least `n` "ack" lines (or the deadline passes).
bool WaitForAcks(const std::string& path, size_t n, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (ReadPeer(path).acks.size() >= n) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

int64_t HighWatermark(client::AdminClient& admin, const std::string& topic, int32_t partition) {
  auto d = admin.DescribeTopic(topic);
  REQUIRE_OK(d);
  for (const auto& p : d->partitions) {
    if (p.partition == partition) return p.high_watermark;
  }
  FAIL("no partition " << partition);
  return -1;
}

E2E_BOTH(
    BrokerKilledMidStream,
    "a broker killed with SIGKILL mid-stream and restarted: every acknowledged record is there, nothing torn",
    "[e2e][crash]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric);
  {
    auto admin = Admin(broker);
    REQUIRE_OK(admin->CreateTopic("k", {{"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
  }
  const std::string out = (dir / "K.out").string();
  Child peer(PeerArgs(broker, "k", "K", 10'000'000, {"partition=0", "min=1", "max=600", "linger.ms=0.05"}),
             out);
  REQUIRE(WaitForAcks(out, static_cast<size_t>(Trials(20000, 2000)), 60s));
  broker.Kill();
  peer.WaitFor(5s);
  peer.Kill(SIGKILL);
  const PeerOutput acked = ReadPeer(out);
  REQUIRE(!acked.acks.empty());
  INFO("acknowledged before the kill: " << acked.acks.size());

  // Restart on the same directory: recovery, then everything acknowledged must be readable.
  BrokerProcess again((dir / "data").string(), fabric);
  std::string why;
  const bool restarted = again.Start(&why);
  INFO(why);
  REQUIRE(restarted);
  auto admin = Admin(again);
  const int64_t hwm = HighWatermark(*admin, "k", 0);
  REQUIRE(hwm >= static_cast<int64_t>(acked.acks.size()));
  auto got = ConsumeUntil(CConfig(again), {{"k", 0}}, static_cast<size_t>(hwm), 60s);
  REQUIRE_OK(got.status);
  REQUIRE(got.recs.size() == static_cast<size_t>(hwm));
  auto seen = Verify(got.recs)["K"];
  // The exclusive producer assigned offsets in order: record i is offset i, with no hole.
  for (int64_t o = 0; o < hwm; ++o) {
    REQUIRE(got.recs[static_cast<size_t>(o)].offset == o);
    REQUIRE(seen.count(o) == 1);
  }
  for (const auto& [p, off, i] : acked.acks) {
    REQUIRE(seen.count(i) == 1);
    CHECK(seen[i].offset == off);
  }
  // And the log takes new records after the restart.
  auto p = Producer::Create(PConfig(again));
  REQUIRE_OK(p);
  auto md = (*p)->Send(MakeRecord("k", 0, std::nullopt, MakeValue("N", 0, 100))).get();
  REQUIRE_OK(md);
  CHECK(md->offset == hwm);
  REQUIRE_OK((*p)->Close(10s));
  CHECK(again.Stop() == 0);
}

E2E_BOTH(
    SharedReservationHole,
    "a producer that stops while holding a shared reservation: the others complete once its lease expires",
    "[e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric, {"lease.ms=500"});
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic("s", {}));
  // A producer reserves 200 bytes at the start of the segment and then hangs (SIGSTOP), so
  // its connection stays up but it neither commits nor renews; later it dies.
  const std::string out = (dir / "R.out").string();
  const auto launched = std::chrono::steady_clock::now();  // the reservation is made after this
  Child hung({BinDir() + "/rdmq_e2e_peer", "reserve", broker.control(), "s", "0", "200"}, out);
  const auto end = std::chrono::steady_clock::now() + 20s;
  std::string line;
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream in(out);
    if (std::getline(in, line) && line.rfind("reserved", 0) == 0) break;
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(line == "reserved 0");
  ::kill(hung.pid(), SIGSTOP);

  ProducerConfig pc = PConfig(broker);
  pc.mode = producer::PartitionMode::kShared;
  auto p = Producer::Create(pc);
  REQUIRE_OK(p);
  std::vector<producer::SendFuture> futs;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    const std::string v = MakeValue("S", i, 50 + i);
    futs.push_back((*p)->Send(MakeRecord("s", 0, std::nullopt, v)));
  }
  // Nothing completes before the hole is filled: it lies before every other range. (Checkable
  // only while the hole's lease surely lives: under the Soft-RoCE VM's emulated CPU getting here
  // can take longer than the lease, and then the hole is rightly filled already.)
  if (std::chrono::steady_clock::now() - launched < 350ms) CHECK_FALSE(futs.front().wait_for(50ms));
  REQUIRE_OK((*p)->Flush(30s));
  // Not before the hole's lease could expire (500 ms after the reservation, made after launch).
  CHECK(std::chrono::steady_clock::now() - launched >= 450ms);
  (void)t0;
  int64_t last = -1;
  for (auto& f : futs) {
    auto md = f.get();
    REQUIRE_OK(md);
    CHECK(md->offset > last);
    last = md->offset;
  }
  auto got = ConsumeUntil(CConfig(broker), {{"s", 0}}, 100, 20s);
  REQUIRE_OK(got.status);
  REQUIRE(got.recs.size() == 100);
  auto seen = Verify(got.recs)["S"];
  CHECK(seen.size() == 100);
  ::kill(hung.pid(), SIGKILL);
  REQUIRE_OK((*p)->Close(10s));
  CHECK(broker.Stop() == 0);
}

E2E_BOTH(
    RollAndRetention,
    "a consumer reading across segment rolls and retention: every record it may, then a clear out-of-range",
    "[e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric, {"log.retention.check.interval.ms=10"});
  auto admin = Admin(broker);
  // Segments of 64 KiB whose records are deleted a minute after their timestamps. The records
  // are stamped 50 s in the past: every sealed segment goes in one wave about 10 s from now,
  // after which only the active one is left and nothing more is deleted.
  REQUIRE_OK(admin->CreateTopic(
      "r", {{"segment.bytes", "65536"}, {"max.message.bytes", "16384"}, {"retention.ms", "60000"}}));
  auto p = Producer::Create(PConfig(broker));
  REQUIRE_OK(p);
  const int n = 1200;  // about 10 segments
  const int64_t stamp = WallMillis().value() - 50'000;
  for (int i = 0; i < n; ++i) {
    const std::string value = MakeValue("R", i, 500);
    auto rec = MakeRecord("r", 0, std::nullopt, value);
    rec.timestamp_ms = stamp;
    REQUIRE_OK((*p)->Send(rec, nullptr));
  }
  REQUIRE_OK((*p)->Flush(30s));
  auto d = admin->DescribeTopic("r");
  REQUIRE_OK(d);
  REQUIRE(d->partitions.size() == 1);
  CHECK(d->partitions[0].segments >= 8);
  CHECK(d->partitions[0].log_start_offset == 0);

  // A consumer reads everything across the rolls before retention comes.
  auto all = ConsumeUntil(CConfig(broker), {{"r", 0}}, n, 30s);
  REQUIRE_OK(all.status);
  REQUIRE(all.recs.size() == static_cast<size_t>(n));
  auto seen = Verify(all.recs)["R"];
  for (int i = 0; i < n; ++i) CHECK(seen[i].offset == i);

  // Another one reads 100 records, then retention deletes the segments under its position.
  ConsumerConfig none = CConfig(broker);
  none.auto_offset_reset = consumer::OffsetReset::kNone;
  none.max_poll_records = 100;
  auto early = Consumer::Create(none);
  REQUIRE_OK(early);
  REQUIRE_OK((*early)->Assign({{"r", 0}}));
  REQUIRE_OK((*early)->SeekToBeginning({}));
  size_t read_early = 0;
  while (read_early < 100) {
    auto recs = (*early)->Poll(1s);
    REQUIRE_OK(recs);
    read_early += recs->size();
  }
  int64_t start = 0;
  for (int i = 0; i < 6000 && start <= 100; ++i) {
    auto dd = admin->DescribeTopic("r");
    REQUIRE_OK(dd);
    start = dd->partitions[0].log_start_offset;
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(start > 100);
  // auto.offset.reset=none: a clear out-of-range error naming the partition.
  auto r = (*early)->Poll(1s);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().is(protocol::WireError::kOffsetOutOfRange));
  CHECK(r.status().ToString().find("r-0") != std::string::npos);
  // auto.offset.reset=earliest: moves to the log start and reads every record still kept.
  auto rest = ConsumeUntil(CConfig(broker), {{"r", 0}}, static_cast<size_t>(n - start), 30s);
  REQUIRE_OK(rest.status);
  REQUIRE(rest.recs.size() == static_cast<size_t>(n - start));
  CHECK(rest.recs.front().offset == start);
  CHECK(rest.recs.back().offset == n - 1);
  REQUIRE_OK((*p)->Close(10s));
  CHECK(broker.Stop() == 0);
}

E2E_BOTH(PausedProducer,
         "a producer paused past its lease resumes: the lease is lost, what was not acknowledged is resent, "
         "nothing lost or duplicated",
         "[e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric, {"lease.ms=300"});
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic("p", {{"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
  const long n = Trials(20000, 4000);
  const std::string out = (dir / "P.out").string();
  Child peer(PeerArgs(broker, "p", "P", n, {"partition=0", "min=10", "max=300", "linger.ms=0.1"}), out);
  REQUIRE(WaitForAcks(out, static_cast<size_t>(n / 10), 60s));
  ::kill(peer.pid(), SIGSTOP);
  std::this_thread::sleep_for(1500ms);  // five leases long
  ::kill(peer.pid(), SIGCONT);
  REQUIRE(peer.WaitFor(120s));
  CHECK(WIFEXITED(peer.status()));
  CHECK(WEXITSTATUS(peer.status()) == 0);
  const PeerOutput acked = ReadPeer(out);
  CHECK(acked.acks.size() == static_cast<size_t>(n));
  INFO("first failure: " << (acked.fails.empty() ? std::string("none") : acked.fails.front()));
  CHECK(acked.fails.empty());
  auto got = ConsumeUntil(CConfig(broker), {{"p", 0}}, static_cast<size_t>(n), 60s);
  REQUIRE_OK(got.status);
  REQUIRE(got.recs.size() == static_cast<size_t>(n));
  auto seen = Verify(got.recs)["P"];
  REQUIRE(seen.size() == static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) CHECK(seen[i].offset == i);
  for (const auto& [p, off, i] : acked.acks) CHECK(seen[i].offset == off);
  CHECK(HighWatermark(*admin, "p", 0) == n);
  CHECK(broker.Stop() == 0);
}

E2E_BOTH(DeleteTopicWhileInUse,
         "deleting a topic in use ends its leases, wakes its consumers and removes its files", "[e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric);
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic("gone", {}));
  auto p = Producer::Create(PConfig(broker));
  REQUIRE_OK(p);
  REQUIRE_OK((*p)->Send(MakeRecord("gone", 0, std::nullopt, "x")).get());
  auto c = Consumer::Create(CConfig(broker));
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->Assign({{"gone", 0}}));
  auto first = (*c)->Poll(5s);
  REQUIRE_OK(first);
  CHECK(first->size() == 1);
  Status polled;
  std::thread waiter([&] {
    for (int i = 0; i < 100; ++i) {
      auto r = (*c)->Poll(200ms);
      if (!r.ok()) {
        polled = r.status();
        return;
      }
    }
  });
  std::this_thread::sleep_for(100ms);
  REQUIRE_OK(admin->DeleteTopic("gone"));
  waiter.join();
  INFO("Poll after the deletion: " << polled.ToString());
  CHECK(polled.is(protocol::WireError::kUnknownTopic));
  CHECK_FALSE(std::filesystem::exists(dir / "data" / "topics" / "gone-0"));
  auto md = (*p)->Send(MakeRecord("gone", 0, std::nullopt, "y")).get();
  CHECK_FALSE(md.ok());
  auto d = admin->DescribeTopic("gone");
  CHECK(d.status().is(protocol::WireError::kUnknownTopic));
  // The name can be used again, from offset 0.
  REQUIRE_OK(admin->CreateTopic("gone", {}));
  auto p2 = Producer::Create(PConfig(broker));
  REQUIRE_OK(p2);
  auto md2 = (*p2)->Send(MakeRecord("gone", 0, std::nullopt, "z")).get();
  REQUIRE_OK(md2);
  CHECK(md2->offset == 0);
  CHECK(broker.Stop() == 0);
}

E2E_BOTH(IdempotenceAcrossRestart, "an idempotent producer's last sequence survives a broker restart",
         "[e2e][crash]") {
  TempDir dir;
  START_BROKER(broker, dir, fabric);
  auto admin = Admin(broker);
  REQUIRE_OK(admin->CreateTopic("i", {}));
  ProducerConfig pc = PConfig(broker);
  pc.buffer_memory = 1 << 20;  // flow control: four chunks of 256 KiB
  auto p = Producer::Create(pc);
  REQUIRE_OK(p);
  const std::string big(20000, 'b');
  for (int i = 0; i < 300; ++i) REQUIRE_OK((*p)->Send(MakeRecord("i", 0, std::nullopt, big), nullptr));
  REQUIRE_OK((*p)->Flush(30s));
  broker.Kill();
  p->reset();
  BrokerProcess again((dir / "data").string(), fabric);
  std::string why;
  const bool restarted = again.Start(&why);
  INFO(why);
  REQUIRE(restarted);
  CHECK(HighWatermark(*Admin(again), "i", 0) == 300);
  // The producer state came back from the log: a client claiming the same producer id sees
  // its last sequence (299) and the next offset.
  auto conn = client::Connection::Open(again.Options());
  REQUIRE_OK(conn);
  auto acks = (*conn)->fabric().Allocate(4096, fabric::kLocalWrite | fabric::kRemoteWrite);
  REQUIRE_OK(acks);
  auto grant = (*conn)->data()->GrantAccess(**acks, 0, 64, fabric::kRemoteWrite);
  REQUIRE_OK(grant);
  protocol::OpenProduceRequest req;
  req.topic = "i";
  req.partition = PartitionId(0);
  {
    // The producer's id, from the first batch header in the segment file (bytes 43..50, BE).
    std::ifstream seg(dir / "data" / "topics" / "i-0" / "00000000000000000000.seg", std::ios::binary);
    seg.seekg(4096 + 43);
    unsigned char b[8];
    seg.read(reinterpret_cast<char*>(b), 8);
    int64_t id = 0;
    for (unsigned char x : b) id = (id << 8) | x;
    req.producer_id = ProducerId(id);
  }
  REQUIRE(req.producer_id.value() >= 0);
  req.producer_epoch = 0;
  req.ack_region.bytes = (*grant)->descriptor().Encode();
  auto lease = (*conn)->Call<protocol::LeaseResponse>(protocol::Api::kOpenProduce, req);
  REQUIRE_OK(lease);
  CHECK(lease->last_sequence == 299);
  CHECK(lease->next_offset == Offset(300));
  CHECK(again.Stop() == 0);
}

E2E_BOTH(SpareSegments,
         "a written partition's next segment is made ahead of its roll and nothing is lost across the rolls",
         "[e2e]") {
  for (const bool preallocate : {true, false}) {
    INFO("log.segment.preallocate=" << preallocate);
    TempDir dir;
    START_BROKER(
        broker, dir, fabric,
        std::vector<std::string>{std::string("log.segment.preallocate=") + (preallocate ? "true" : "false")});
    auto admin = Admin(broker);
    REQUIRE_OK(admin->CreateTopic("s", {{"segment.bytes", "1048576"}, {"max.message.bytes", "262144"}}));
    auto p = Producer::Create(PConfig(broker));
    REQUIRE_OK(p);
    // About 4 MiB of records: four rolls of 1 MiB segments.
    const int n = 4000;
    auto value = [](int i) {
      std::string v = "v-" + std::to_string(i) + "-";
      v.resize(1000, static_cast<char>('a' + i % 26));
      return v;
    };
    std::vector<producer::SendFuture> futs;
    for (int i = 0; i < n; ++i) futs.push_back((*p)->Send(MakeRecord("s", 0, std::nullopt, value(i))));
    REQUIRE_OK((*p)->Flush(30s));
    for (int i = 0; i < n; ++i) {
      auto md = futs[static_cast<size_t>(i)].get();
      REQUIRE_OK(md);
      CHECK(md->offset == i);
    }
    auto c = Consumer::Create(CConfig(broker));
    REQUIRE_OK(c);
    REQUIRE_OK((*c)->Assign({{"s", 0}}));
    auto got = Drain(**c, n, 30s);
    REQUIRE(got[0].size() == static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      CHECK(got[0][static_cast<size_t>(i)].first == i);
      CHECK(got[0][static_cast<size_t>(i)].second == value(i));
    }
    auto spares = [&](const char* outcome) {
      return SampleValue(HttpGet(broker.http(), "/metrics").body,
                         std::string("rdmq_spare_segments_total{outcome=\"") + outcome + "\"}");
    };
    if (preallocate) {
      // Made by the broker's preparer thread: give it the time a loaded machine may need.
      const auto end = std::chrono::steady_clock::now() + 20s;
      while (spares("made") < 1 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(20ms);
      CHECK(spares("made") >= 1);
    } else {
      CHECK(spares("made") == 0);
    }
    CHECK(spares("failed") == 0);
    REQUIRE_OK((*p)->Close(10s));
    CHECK(broker.Stop() == 0);
    // The rolls happened, and closing the logs deleted any spare not used yet.
    int segments = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "data")) {
      CHECK(e.path().filename() != "spare.seg.tmp");
      if (e.path().extension() == ".seg") ++segments;
    }
    CHECK(segments >= 4);
  }
}

}  // namespace
}  // namespace rdmq::test
