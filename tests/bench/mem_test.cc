// The mem system through the System interface alone (its rings keep every record, in order and
// intact, across wraps and while the producer waits for room; producers do not wait for a
// consumer that is gone or absent), and the driver's latency sampling.
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "rdmq/bench/driver.h"
#include "rdmq/bench/report.h"
#include "rdmq/bench/system.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::bench;
using namespace std::chrono_literals;

namespace {

Workload MemShape(int consumers) {
  Workload w;
  w.system = "mem";
  w.consumers = consumers;
  w.duration = 1s;  // no count: the rings get their default size (8 MiB, 64 KiB batches)
  return w;
}

// Record i: 16 to 315 bytes (sizes that do not divide the ring), contents derived from i.
std::vector<std::byte> Payload(uint64_t i) {
  std::vector<std::byte> p(16 + (i * 7919) % 300);
  for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<std::byte>((i + j * 31) & 0xff);
  return p;
}

class Acks final : public AckSink {
 public:
  void OnAck(uint64_t tag, const Status& s) override {
    if (tag != next_tag++) ++out_of_order;
    if (s.ok()) ++ok;
  }
  void OnAcks(std::span<const uint64_t> tags, const Status& s) override {
    ++groups;
    AckSink::OnAcks(tags, s);
  }
  uint64_t next_tag = 1, ok = 0, out_of_order = 0, groups = 0;
};

// Compares every record with Payload(its index).
class Records final : public RecordSink {
 public:
  void OnRecords(int, std::span<const std::span<const std::byte>> records) override {
    for (const auto& r : records) {
      const std::vector<std::byte> want = Payload(next);
      if (r.size() != want.size() || std::memcmp(r.data(), want.data(), want.size()) != 0) ++wrong;
      ++next;
    }
  }
  uint64_t next = 0, wrong = 0;
};

// A mem system of one partition, set up, with its one consumer open.
struct MemPair {
  MemPair() : sys(MakeMemSystem(MemShape(1))) {
    REQUIRE_OK(sys->Setup());
    auto c = sys->OpenConsumer(0, {0}, &records);
    REQUIRE_OK(c);
    consumer = std::move(*c);
  }
  std::unique_ptr<ProducerClient> OpenProducer() {
    auto p = sys->OpenProducer(0, &acks);
    REQUIRE_OK(p);
    return std::move(*p);
  }
  std::unique_ptr<System> sys;
  Acks acks;
  Records records;
  std::unique_ptr<ConsumerClient> consumer;
};

}  // namespace

TEST_CASE("mem: records come back in order and intact across ring wraps", "[bench][mem]") {
  MemPair m;
  auto producer = m.OpenProducer();
  const uint64_t n = 120000;  // about 20 MB: two wraps of the ring
  for (uint64_t i = 0; i < n; ++i) {
    REQUIRE_OK(producer->Send(0, Payload(i), i + 1));
    if (i % 64 == 63) {
      REQUIRE_OK(producer->Poll(0us));
      REQUIRE_OK(m.consumer->Poll(0ms));
    }
  }
  REQUIRE_OK(producer->Flush(1s));
  for (int k = 0; k < 100 && m.records.next < n; ++k) REQUIRE_OK(m.consumer->Poll(0ms));
  CHECK(m.acks.ok == n);
  CHECK(m.acks.out_of_order == 0);
  CHECK(m.acks.groups < n / 32);  // a group per batch, not per record
  CHECK(m.records.next == n);
  CHECK(m.records.wrong == 0);
  CHECK_OK(m.sys->Cleanup());
}

TEST_CASE("mem: a producer ahead of its consumer waits for room and loses nothing", "[bench][mem]") {
  MemPair m;
  const uint64_t n = 150000;
  Status read_status;
  std::thread reader([&] {
    // A slow reader: the producer fills the ring and must wait. (No assertions off the main
    // thread.)
    for (int k = 0; m.records.next < n && k < 200000 && read_status.ok(); ++k) {
      if (k % 8 == 0) std::this_thread::sleep_for(1ms);
      read_status = m.consumer->Poll(10ms);
    }
  });
  auto producer = m.OpenProducer();
  for (uint64_t i = 0; i < n; ++i) {
    REQUIRE_OK(producer->Send(0, Payload(i), i + 1));
    if (i % 64 == 63) REQUIRE_OK(producer->Poll(0us));
  }
  REQUIRE_OK(producer->Flush(1s));
  reader.join();
  CHECK_OK(read_status);
  CHECK(m.acks.ok == n);
  CHECK(m.records.next == n);
  CHECK(m.records.wrong == 0);
}

TEST_CASE("mem: producers overwrite the ring when there is no consumer, or it is gone", "[bench][mem]") {
  for (bool had_consumer : {false, true}) {
    const Workload w = MemShape(had_consumer ? 1 : 0);
    auto sys = MakeMemSystem(w);
    REQUIRE_OK(sys->Setup());
    Records records;
    if (had_consumer) {
      auto consumer = sys->OpenConsumer(0, {0}, &records);
      REQUIRE_OK(consumer);
    }  // closed here, having read nothing
    Acks acks;
    auto producer = sys->OpenProducer(0, &acks);
    REQUIRE_OK(producer);
    const uint64_t n = 100000;  // more than the ring holds
    for (uint64_t i = 0; i < n; ++i) REQUIRE_OK((*producer)->Send(0, Payload(i), i + 1));
    REQUIRE_OK((*producer)->Flush(1s));
    CHECK(acks.ok == n);
  }
}

TEST_CASE("mem: a partition it does not have is refused", "[bench][mem]") {
  Workload w = MemShape(0);
  w.partitions = 2;
  auto sys = MakeMemSystem(w);
  REQUIRE_OK(sys->Setup());
  Acks acks;
  auto producer = sys->OpenProducer(0, &acks);
  REQUIRE_OK(producer);
  CHECK((*producer)->Send(2, Payload(0), 1).is(Errc::kInvalidArgument));
  Records records;
  CHECK(sys->OpenConsumer(0, {0, 5}, &records).status().is(Errc::kInvalidArgument));
}

TEST_CASE("the latency sampler times about 1 record in N", "[bench][driver]") {
  for (uint32_t every : {0u, 1u, 16u, 100u}) {
    LatencySampler s(every, 12345);
    const uint64_t draws = 1 << 20;
    uint64_t timed = 0;
    for (uint64_t i = 0; i < draws; ++i) timed += s.Next();
    INFO("every " << every);
    if (every <= 1) {
      CHECK(timed == draws);
    } else {
      const double expect = static_cast<double>(draws) / every;
      CHECK(static_cast<double>(timed) > expect * 0.95);
      CHECK(static_cast<double>(timed) < expect * 1.05);
    }
  }
}

TEST_CASE("latencies are sampled only where the clock would cost", "[bench][driver]") {
  Workload w;
  RunOptions o;
  w.window = 1024;
  CHECK(EffectiveLatencySample(w, o) == kAutoSample);
  w.window = kAutoSampleWindow;
  CHECK(EffectiveLatencySample(w, o) == 1);  // few in flight: the clock is cheap beside the wait
  w.window = 1024;
  w.rate = 1000;
  CHECK(EffectiveLatencySample(w, o) == 1);  // paced: the clock is read per record anyway
  o.latency_sample = 7;
  CHECK(EffectiveLatencySample(w, o) == 7);
}

TEST_CASE("a run sampled 1 in N checks every record and times about 1 in N", "[bench][driver]") {
  Workload w;
  w.system = "mem";
  w.count = 100000;
  w.window = 4096;
  RunOptions o;
  o.progress = ProgressMode::kNone;
  o.latency_sample = 10;
  auto sys = MakeMemSystem(w);
  Result<Report> r = RunBenchmark(w, *sys, o);
  REQUIRE_OK(r);
  CHECK(r->CountsOk());
  CHECK(r->consumed == 100000);
  CHECK(r->latency_sample_every == 10);
  CHECK(r->ack_latency.count() > 9000);
  CHECK(r->ack_latency.count() < 11000);
  CHECK(r->e2e_latency.count() == r->ack_latency.count());
  CHECK(ReportJson(*r)["latency_ns"]["sample_every"] == 10);
}

TEST_CASE("the report gives a system's rates as a fraction of mem's", "[bench][report]") {
  Report r;
  r.workload.system = "rdmq";
  r.workload.consumers = 1;
  r.acked = r.sent = r.consumed = r.expected = 1000;
  r.produce_s = 0.001;  // 1 M/s
  r.consume_s = 0.002;  // 500 k/s
  CHECK(ReportJson(r)["vs_mem"].is_null());
  r.mem_produce_records_per_s = 4e6;
  r.mem_consume_records_per_s = 2e6;
  const nlohmann::json j = ReportJson(r);
  CHECK(j["vs_mem"]["produce_fraction"].get<double>() == Approx(0.25));
  CHECK(j["vs_mem"]["consume_fraction"].get<double>() == Approx(0.25));
  CHECK(j["vs_mem"]["produce_records_per_s"].get<double>() == Approx(4e6));
  rdmq::test::TempDir dir;
  const std::string path = (dir / "summary.txt").string();
  std::FILE* f = std::fopen(path.c_str(), "w+");
  REQUIRE(f != nullptr);
  PrintSummary(r, f);
  std::rewind(f);
  std::string text(8192, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  INFO(text);
  CHECK(text.find("vs mem     produce 0.25 of mem's 4.00 M records/s, consume 0.25 of mem's 2.00 M") !=
        std::string::npos);
}
