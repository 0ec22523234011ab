// The client APIs against a real broker: config keys, futures and callbacks, Flush/Close,
// acks=0, linger, Seek/SeekToEnd/Position/OffsetForTime, Wakeup, a waiting consumer, and the
// daemon's command line.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "e2e_util.h"
#include "e2e_values.h"
#include "rdmq/client/admin.h"
#include "rdmq/common/clock.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::test {
namespace {

using namespace std::chrono_literals;

producer::ProducerRecord Record(std::string_view topic, int32_t partition, std::string_view value,
                                int64_t ts = -1) {
  // (designated initializers, as applications write them, must compile under -Wextra -Werror)
  return {.topic = topic, .partition = partition, .value = value, .timestamp_ms = ts};
}

TEST_CASE("config keys: Kafka names, bad keys and values named in the error", "[client][config]") {
  client::ClientOptions c;
  REQUIRE_OK(c.Set("bootstrap.servers", "tcp:10.0.0.1:9092,tcp:10.0.0.2:9092"));
  CHECK(c.bootstrap == "tcp:10.0.0.1:9092,tcp:10.0.0.2:9092");
  auto servers = c.BootstrapServers();
  REQUIRE_OK(servers);
  CHECK(*servers == std::vector<std::string>{"tcp:10.0.0.1:9092", "tcp:10.0.0.2:9092"});
  REQUIRE_OK(c.Set("reconnect.backoff.ms", "20"));
  CHECK(c.reconnect_backoff == 20ms);
  REQUIRE_OK(c.Set("reconnect.backoff.max.ms", "2000"));
  CHECK(c.reconnect_backoff_max == 2000ms);
  REQUIRE_OK(c.Set("retry.backoff.ms", "5"));
  CHECK(c.retry_backoff == 5ms);
  REQUIRE_OK(c.Set("client.id", "me"));
  CHECK(c.client_name == "me");
  REQUIRE_OK(c.Set("request.timeout.ms", "1500"));
  CHECK(c.request_timeout == 1500ms);
  CHECK(c.Set("request.timeout.ms", "0").ToString().find("request.timeout.ms") != std::string::npos);
  CHECK(c.Set("request.timeout.ms", "abc").is(Errc::kInvalidArgument));
  CHECK(c.Set("no.such", "1").ToString().find("no.such") != std::string::npos);
  client::ClientOptions d;
  ::setenv("RDMQ_BROKER", "unix:/x/rdmq.sock", 1);
  CHECK(d.ResolvedBootstrap() == "unix:/x/rdmq.sock");
  ::unsetenv("RDMQ_BROKER");
  CHECK(d.ResolvedBootstrap() == "unix:./rdmq-data/rdmq.sock");

  producer::ProducerConfig p;
  REQUIRE_OK(p.Set("linger.ms", "0.05"));
  CHECK(p.linger == 50us);
  REQUIRE_OK(p.Set("acks", "all"));
  CHECK(p.acks == -1);
  REQUIRE_OK(p.Set("acks", "0"));
  CHECK(p.acks == 0);
  CHECK_FALSE(p.Set("acks", "2").ok());
  REQUIRE_OK(p.Set("partition.mode", "shared"));
  CHECK(p.mode == producer::PartitionMode::kShared);
  CHECK(p.Set("partition.mode", "both").ToString().find("exclusive or shared") != std::string::npos);
  REQUIRE_OK(p.Set("enable.idempotence", "false"));
  CHECK_FALSE(p.enable_idempotence);
  REQUIRE_OK(p.Set("batch.size", "65536"));
  CHECK(p.batch_size == 65536);
  CHECK_FALSE(p.Set("batch.size", "10").ok());
  REQUIRE_OK(p.Set("client.id", "via-producer"));
  CHECK(p.client.client_name == "via-producer");
  CHECK(p.Set("bogus", "1").ToString().find("bogus") != std::string::npos);

  consumer::ConsumerConfig k;
  REQUIRE_OK(k.Set("auto.offset.reset", "none"));
  CHECK(k.auto_offset_reset == consumer::OffsetReset::kNone);
  CHECK_FALSE(k.Set("auto.offset.reset", "middle").ok());
  REQUIRE_OK(k.Set("max.poll.records", "7"));
  CHECK(k.max_poll_records == 7);
  REQUIRE_OK(k.Set("check.crcs", "false"));
  CHECK_FALSE(k.check_crcs);
  CHECK(k.Set("fetch.max.bytes", "1").ToString().find("fetch.max.bytes") != std::string::npos);
}

TEST_CASE("a client without a broker gets a clear kUnavailable naming the address", "[client][e2e]") {
  TempDir dir;
  client::ClientOptions o;
  o.bootstrap = "unix:" + (dir / "nothing.sock").string();
  o.request_timeout = 2s;
  auto a = client::AdminClient::Connect(o);
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().is(Errc::kUnavailable));
  CHECK(a.status().ToString().find("nothing.sock") != std::string::npos);
  o.bootstrap = "ftp:nowhere";
  CHECK(client::AdminClient::Connect(o).status().is(Errc::kInvalidArgument));
}

TEST_CASE("producer: futures, callbacks, acks=0, linger, Flush and Close", "[client][e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  auto admin = client::AdminClient::Connect(broker.Options());
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("t", {{"partitions", "3"}}));
  auto topics = (*admin)->ListTopics();
  REQUIRE_OK(topics);
  REQUIRE(topics->size() == 1);
  CHECK((*topics)[0].partition_count() == 3);

  producer::ProducerConfig pc;
  pc.client = broker.Options();
  pc.linger = 2ms;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  auto n = (*p)->PartitionCount("t");
  REQUIRE_OK(n);
  CHECK(*n == 3);
  std::atomic<int> called{0};
  std::atomic<int64_t> last{-1};
  for (int i = 0; i < 100; ++i) {
    REQUIRE_OK((*p)->Send(Record("t", 1, "cb"), [&](const Result<producer::RecordMetadata>& md) {
      if (md.ok() && md->partition == 1 && md->offset == last + 1) last = md->offset;
      ++called;
    }));
  }
  auto f = (*p)->Send(Record("t", 1, "future", 1700000000123));
  REQUIRE_OK((*p)->Flush(10s));
  CHECK(called == 100);
  CHECK(last == 99);  // callbacks in offset order
  REQUIRE(f.ready());
  auto md = f.get();
  REQUIRE_OK(md);
  CHECK(md->offset == 100);
  CHECK(md->timestamp_ms == 1700000000123);
  CHECK(md->serialized_value_size == 6);
  CHECK(md->topic == "t");
  REQUIRE_OK((*p)->Close(10s));
  CHECK((*p)->Close(1s).is(Errc::kFailedPrecondition));
  CHECK((*p)->Send(Record("t", 0, "late")).get().status().is(Errc::kFailedPrecondition));

  // acks=0: the future is ready once the record is posted, without an offset.
  pc.acks = 0;
  pc.linger = 0us;
  auto q = producer::Producer::Create(pc);
  REQUIRE_OK(q);
  auto f0 = (*q)->Send(Record("t", 2, "fire"));
  REQUIRE(f0.wait_for(10s));
  auto m0 = f0.get();
  REQUIRE_OK(m0);
  CHECK(m0->offset == -1);
  REQUIRE_OK((*q)->Close(10s));
  auto d = (*admin)->DescribeTopic("t");
  REQUIRE_OK(d);
  REQUIRE(d->partitions.size() == 3);
  CHECK(d->partitions[1].high_watermark == 101);
  CHECK(d->partitions[2].high_watermark == 1);
  CHECK_FALSE(d->partitions[1].exclusive_lease);
}

// Kafka's promise: callbacks of one partition run in offset order, one at a time, whichever
// thread completes the batch (senders processing acks inline, a Flush, the I/O thread).
TEST_CASE("producer callbacks of a partition run in offset order while threads race to complete",
          "[client][e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  auto admin = client::AdminClient::Connect(broker.Options());
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("order", {{"partitions", "2"}}));
  const auto mode = GENERATE(producer::PartitionMode::kExclusive, producer::PartitionMode::kShared);
  INFO("mode " << (mode == producer::PartitionMode::kShared ? "shared" : "exclusive"));
  producer::ProducerConfig pc;
  pc.client = broker.Options();
  pc.mode = mode;
  pc.linger = 0us;
  pc.batch_size = 4096;  // many small batches: many completions
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  const int per_thread = Trials(20000, 2000);
  std::mutex mu;
  std::map<int32_t, int64_t> last;
  std::atomic<int> out_of_order{0}, inside{0}, overlapped{0}, failed{0}, called{0};
  auto cb = [&](const Result<producer::RecordMetadata>& md) {
    if (inside.fetch_add(1) != 0) ++overlapped;  // (only one partition per thread pair below)
    if (!md.ok()) {
      ++failed;
    } else {
      std::lock_guard lock(mu);
      auto [it, fresh] = last.try_emplace(md->partition, md->offset);
      if (!fresh) {
        if (md->offset <= it->second) ++out_of_order;
        it->second = md->offset;
      }
    }
    ++called;
    inside.fetch_sub(1);
  };
  std::atomic<bool> stop{false};
  std::thread flusher([&] {
    while (!stop.load()) (void)(*p)->Flush(10ms);
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < 2; ++t) {
    senders.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        if (!(*p)->Send(Record("order", 0, "ordered value"), cb).ok()) ++failed;
      }
    });
  }
  for (auto& t : senders) t.join();
  REQUIRE_OK((*p)->Flush(30s));
  stop = true;
  flusher.join();
  CHECK(failed == 0);
  CHECK(called == 2 * per_thread);
  CHECK(out_of_order == 0);
  CHECK(overlapped == 0);
  REQUIRE_OK((*p)->Close(10s));
}

TEST_CASE("consumer: Seek, SeekToEnd, Position, OffsetForTime, Wakeup, and a waiting consumer wakes",
          "[client][e2e]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  auto admin = client::AdminClient::Connect(broker.Options());
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("t", {}));
  producer::ProducerConfig pc;
  pc.client = broker.Options();
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  std::vector<std::string> values;
  for (int i = 0; i < 50; ++i) values.push_back(MakeValue("V", i, 30));
  for (int i = 0; i < 50; ++i) REQUIRE_OK((*p)->Send(Record("t", 0, values[i], 1000 * (i + 1)), nullptr));
  REQUIRE_OK((*p)->Flush(10s));

  consumer::ConsumerConfig cc;
  cc.client = broker.Options();
  cc.max_poll_records = 10;
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  const client::TopicPartition tp{"t", 0};
  REQUIRE_OK((*c)->Assign({tp}));
  CHECK((*c)->Assignment() == std::vector<client::TopicPartition>{tp});
  auto pos = (*c)->Position(tp);
  REQUIRE_OK(pos);
  CHECK(*pos == 0);
  REQUIRE_OK((*c)->Seek(tp, 37));
  auto recs = (*c)->Poll(1s);
  REQUIRE_OK(recs);
  REQUIRE(!recs->empty());
  CHECK(recs->front().offset == 37);
  CHECK(recs->front().timestamp_ms == 38000);
  CHECK(recs->front().value == std::optional<std::string_view>(values[37]));
  CHECK(recs->size() == 10);
  pos = (*c)->Position(tp);
  REQUIRE_OK(pos);
  CHECK(*pos == 47);
  auto t = (*c)->OffsetForTime(tp, 20500);
  REQUIRE_OK(t);
  CHECK(*t == 20);
  t = (*c)->OffsetForTime(tp, 999999);
  REQUIRE_OK(t);
  CHECK(*t == -1);
  REQUIRE_OK((*c)->SeekToEnd({tp}));
  pos = (*c)->Position(tp);
  REQUIRE_OK(pos);
  CHECK(*pos == 50);
  CHECK((*c)->Seek({"other", 0}, 1).is(Errc::kInvalidArgument));

  // Wakeup ends a long Poll early, with no records.
  std::thread waker([&] {
    std::this_thread::sleep_for(100ms);
    (*c)->Wakeup();
  });
  const auto t0 = std::chrono::steady_clock::now();
  recs = (*c)->Poll(20s);
  waker.join();
  REQUIRE_OK(recs);
  CHECK(recs->empty());
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);

  // A consumer waiting at the end gets a new record as soon as it is committed.
  std::atomic<int64_t> got{-1};
  std::thread reader([&] {
    auto r = (*c)->Poll(20s);
    if (r.ok() && !r->empty()) got = r->front().offset;
  });
  std::this_thread::sleep_for(200ms);
  auto md = (*p)->Send(Record("t", 0, "late")).get();
  REQUIRE_OK(md);
  reader.join();
  CHECK(got == 50);
  REQUIRE_OK((*p)->Close(10s));
  c->reset();
}

TEST_CASE("rdmq-broker: --help, --print-config, bad options, a second broker on the same directory",
          "[client][e2e]") {
  TempDir dir;
  auto run = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), BinDir() + "/rdmq-broker");
    Child c(args, (dir / "out.txt").string());
    REQUIRE(c.WaitFor(10s));
    std::ifstream in(dir / "out.txt");
    out->assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return WIFEXITED(c.status()) ? WEXITSTATUS(c.status()) : -1;
  };
  std::string out;
  CHECK(run({"--help"}, &out) == 0);
  for (const char* key : {"data.dir", "fabric", "listen.control", "listen.data", "lease.ms", "log.format",
                          "num.partitions", "log.segment.bytes", "durability", "--print-config", "--set"}) {
    CHECK(out.find(key) != std::string::npos);
  }
  CHECK(run({"--data-dir", (dir / "d").string(), "--set", "num.partitions=4", "--print-config"}, &out) == 0);
  CHECK(out.find("num.partitions=4") != std::string::npos);
  CHECK(out.find("listen.control=" + (dir / "d").string() + "/rdmq.sock") != std::string::npos);
  CHECK(run({"--frobnicate"}, &out) == 2);
  CHECK(out.find("--frobnicate") != std::string::npos);
  CHECK(run({"--set", "fabric=carrier-pigeon"}, &out) == 2);
  CHECK(out.find("shm, tcp or verbs") != std::string::npos);
  {
    std::ofstream cfg(dir / "bad.json");
    cfg << "{\"lease.ms\": \"many\"}";
  }
  CHECK(run({"--config", (dir / "bad.json").string()}, &out) == 2);
  CHECK(out.find("lease.ms") != std::string::npos);

  START_BROKER(broker, dir, "shm");
  CHECK(run({"--data-dir", (dir / "data").string()}, &out) == 1);
  CHECK(out.find("in use by another rdmq-broker") != std::string::npos);
  // log.format=json: one JSON object per line.
  std::string json;
  BrokerProcess jb((dir / "json").string(), "shm", {"log.format=json"});
  REQUIRE(jb.Start(&json));
  CHECK(jb.Stop() == 0);
  std::ifstream log(dir / "json.broker.log");
  std::string first;
  std::getline(log, first);
  CHECK(first.rfind("{", 0) == 0);
  CHECK(broker.Stop() == 0);
}

// The broker stays away for longer than delivery.timeout.ms: every pending record fails with an
// error that says why, Flush and Close return by their deadlines, polls return nothing (no
// error: the consumer waits for the broker), and an admin call fails after its request timeout.
TEST_CASE("when the broker stays away past delivery.timeout.ms, pending records fail saying why",
          "[client][e2e]") {
  using Clock = std::chrono::steady_clock;
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  client::ClientOptions ao = broker.Options();
  ao.request_timeout = 1s;
  auto admin = client::AdminClient::Connect(ao);
  REQUIRE_OK(admin);
  REQUIRE_OK((*admin)->CreateTopic("t", {{"partitions", "2"}}));
  producer::ProducerConfig pc;
  pc.client = broker.Options();
  pc.linger = 10ms;
  pc.delivery_timeout = 2s;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  REQUIRE_OK((*p)->Send(Record("t", 0, "first")).get());
  consumer::ConsumerConfig cc;
  cc.client = broker.Options();
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->Assign({{"t", 0}}));
  REQUIRE_OK((*c)->Poll(1s));
  broker.Kill();
  const auto killed = Clock::now();
  // Records sent while the broker is away are taken: they wait for it.
  std::vector<producer::SendFuture> pending;
  for (int i = 0; i < 20; ++i) pending.push_back((*p)->Send(Record("t", i % 2, "lost")));
  auto t0 = Clock::now();
  const Status flushed = (*p)->Flush(300ms);
  CHECK(flushed.is(Errc::kTimeout));
  CHECK(Clock::now() - t0 < 300ms + 2s);  // by its deadline (with room for a slow machine)
  for (auto& f : pending) {
    REQUIRE(f.wait_for(2s + 1s + 5s));
    const Status s = f.get().status();
    CHECK(s.is(Errc::kTimeout));
    CHECK(s.ToString().find("delivery.timeout.ms=2000") != std::string::npos);
    CHECK(s.ToString().find("unreachable") != std::string::npos);
    CHECK(s.ToString().find(broker.control()) != std::string::npos);
  }
  // Not before the delivery timeout (from the loss of the broker).
  CHECK(Clock::now() - killed >= 2s);
  for (int i = 0; i < 5; ++i) {
    auto r = (*c)->Poll(50ms);
    REQUIRE_OK(r);
    CHECK(r->empty());
  }
  // An admin call is retried (reconnecting) until its request timeout, then fails.
  auto admin2 = client::AdminClient::Connect(ao);
  CHECK(admin2.status().is(Errc::kUnavailable));
  t0 = Clock::now();
  const Status listed = (*admin)->ListTopics().status();
  CHECK(listed.is(Errc::kUnavailable));
  CHECK(Clock::now() - t0 >= ao.request_timeout - 200ms);
  auto late = (*p)->Send(Record("t", 0, "late"));
  t0 = Clock::now();
  const Status closed = (*p)->Close(200ms);
  CHECK(Clock::now() - t0 < 200ms + 2s);
  CHECK(!closed.ok());
  REQUIRE(late.wait_for(1s));
  CHECK(!late.get().ok());
}

// Records that timed out while the broker was away leave a gap in the idempotent producer's
// sequences: once the broker is back, the producer goes on at a new epoch (as Kafka bumps it)
// instead of being refused with OUT_OF_ORDER_SEQUENCE until every later record times out too.
TEST_CASE("after a delivery timeout an idempotent producer carries on when the broker is back",
          "[client][e2e][idempotence]") {
  TempDir dir;
  START_BROKER(broker, dir, "shm");
  {
    auto admin = client::AdminClient::Connect(broker.Options());
    REQUIRE_OK(admin);
    REQUIRE_OK((*admin)->CreateTopic("t", {{"partitions", "1"}}));
  }
  producer::ProducerConfig pc;
  pc.client = broker.Options();
  pc.client.reconnect_backoff = 10ms;
  pc.client.reconnect_backoff_max = 100ms;
  pc.enable_idempotence = true;
  pc.delivery_timeout = 1s;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  REQUIRE_OK((*p)->Send(Record("t", 0, "first")).get());
  broker.Kill();
  std::vector<producer::SendFuture> lost;
  for (int i = 0; i < 10; ++i) lost.push_back((*p)->Send(Record("t", 0, "lost")));
  for (auto& f : lost) {
    REQUIRE(f.wait_for(10s));
    CHECK(f.get().status().is(Errc::kTimeout));
  }
  CHECK((*p)->Flush(1s).is(Errc::kTimeout));  // reports the failures once
  std::string why;
  REQUIRE(broker.Start(&why));
  std::vector<producer::SendFuture> later;
  for (int i = 0; i < 10; ++i) later.push_back((*p)->Send(Record("t", 0, "later" + std::to_string(i))));
  for (auto& f : later) {
    REQUIRE(f.wait_for(20s));
    CHECK_OK(f.get());
  }
  REQUIRE_OK((*p)->Close(5s));
  consumer::ConsumerConfig cc;
  cc.client = broker.Options();
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->Assign({{"t", 0}}));
  std::vector<std::string> got;
  for (int i = 0; i < 100 && (got.empty() || got.back() != "later9"); ++i) {
    auto recs = (*c)->Poll(50ms);
    REQUIRE_OK(recs);
    for (const auto& r : *recs) got.emplace_back(r.value.value_or(""));
  }
  // A timed-out record was not acknowledged, which does not mean it was not stored (Kafka's rule
  // too): a batch written into the segment just as the broker died is adopted by its recovery
  // scan. So between "first" and the later records there may be some "lost" ones, each once.
  std::vector<std::string> want = {"first"};
  for (size_t i = 1; i < got.size() && got[i] == "lost" && i <= lost.size(); ++i) want.push_back("lost");
  for (int i = 0; i < 10; ++i) want.push_back("later" + std::to_string(i));
  INFO("stored " << want.size() - 11 << " of the timed-out records");
  CHECK(got == want);
}

}  // namespace
}  // namespace rdmq::test
