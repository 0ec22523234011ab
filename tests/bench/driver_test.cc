// The driver against the in-process "mem" system and against faulty wrappers of it: counts,
// sequence checks, errors, both worker modes, and the report's JSON and table.
#include "rdmq/bench/driver.h"

#include <cstdio>
#include <set>
#include <string>

#include "rdmq/bench/report.h"
#include "rdmq/bench/system.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::bench;

namespace {

Workload MemWorkload(int producers, int consumers, int partitions, uint64_t count) {
  Workload w;
  w.system = "mem";
  w.producers = producers;
  w.consumers = consumers;
  w.partitions = partitions;
  w.count = count;
  w.message_size = 64;
  w.window = 64;
  return w;
}

RunOptions Quiet() {
  RunOptions o;
  o.progress = ProgressMode::kNone;
  o.sample_interval = std::chrono::milliseconds(10);
  o.drain_timeout = std::chrono::milliseconds(3000);
  return o;
}

// What a faulty producer does to the records it is given.
enum class Fault {
  kNone,
  kDropEvery100,
  kDuplicateEvery100,
  kFailSendAt50,
  kAckErrorEvery10,
  kFailOpenConsumer
};

// Forwards acks but swallows one per duplicated record, so the driver sees one ack per Send.
// The inner system acknowledges the records it stored in order (one partition); the producer
// names the ones to swallow by their index in that order.
class DedupAcks final : public AckSink {
 public:
  explicit DedupAcks(AckSink* outer) : outer_(outer) {}
  void SwallowAck(uint64_t index) { swallow_.insert(index); }
  void OnAck(uint64_t tag, const Status& s) override {
    if (swallow_.erase(seen_++) == 0) outer_->OnAck(tag, s);
  }

 private:
  AckSink* outer_;
  std::set<uint64_t> swallow_;
  uint64_t seen_ = 0;
};

class FaultyProducer final : public ProducerClient {
 public:
  FaultyProducer(std::unique_ptr<ProducerClient> inner, AckSink* sink, Fault fault, DedupAcks* dedup)
      : inner_(std::move(inner)), sink_(sink), fault_(fault), dedup_(dedup) {}
  Status Send(int partition, std::span<const std::byte> payload, uint64_t tag) override {
    ++n_;
    if (fault_ == Fault::kFailSendAt50 && n_ == 50)
      return Status(Errc::kUnavailable, "injected send failure");
    if (fault_ == Fault::kDropEvery100 && n_ % 100 == 0) {
      sink_->OnAck(tag, Status::Ok());  // claims success, never stored
      return Status::Ok();
    }
    if (fault_ == Fault::kAckErrorEvery10 && n_ % 10 == 0) {
      sink_->OnAck(tag, Status(Errc::kNoSpace, "injected ack error"));
      return Status::Ok();
    }
    if (fault_ == Fault::kDuplicateEvery100 && n_ % 100 == 0) {
      // Store the record twice; DedupAcks swallows one copy's ack.
      RDMQ_RETURN_IF_ERROR(inner_->Send(partition, payload, tag));
      if (dedup_ != nullptr) dedup_->SwallowAck(stored_);
      ++stored_;
    }
    ++stored_;
    return inner_->Send(partition, payload, tag);
  }
  Status Poll(std::chrono::microseconds t) override { return inner_->Poll(t); }
  Status Flush(std::chrono::milliseconds t) override { return inner_->Flush(t); }

 private:
  std::unique_ptr<ProducerClient> inner_;
  AckSink* sink_;
  Fault fault_;
  DedupAcks* dedup_;     // kDuplicateEvery100: told which acks to swallow
  uint64_t n_ = 0;       // records given to Send
  uint64_t stored_ = 0;  // records given to the inner system
};

class FaultySystem final : public System {
 public:
  FaultySystem(const Workload& w, Fault fault) : inner_(MakeMemSystem(w)), fault_(fault) {}
  std::string Describe() const override { return "faulty " + inner_->Describe(); }
  Status Setup() override { return inner_->Setup(); }
  Result<std::unique_ptr<ProducerClient>> OpenProducer(int index, AckSink* sink) override {
    AckSink* s = sink;
    DedupAcks* dedup = nullptr;
    if (fault_ == Fault::kDuplicateEvery100) {
      dedup_.push_back(std::make_unique<DedupAcks>(sink));
      dedup = dedup_.back().get();
      s = dedup;
    }
    RDMQ_ASSIGN_OR_RETURN(auto inner, inner_->OpenProducer(index, s));
    return std::unique_ptr<ProducerClient>(
        std::make_unique<FaultyProducer>(std::move(inner), sink, fault_, dedup));
  }
  Result<std::unique_ptr<ConsumerClient>> OpenConsumer(int index, const std::vector<int>& partitions,
                                                       RecordSink* sink) override {
    if (fault_ == Fault::kFailOpenConsumer)
      return Status(Errc::kUnavailable, "injected: consumer cannot connect");
    return inner_->OpenConsumer(index, partitions, sink);
  }
  Status Cleanup() override { return inner_->Cleanup(); }

 private:
  std::unique_ptr<System> inner_;
  Fault fault_;
  std::vector<std::unique_ptr<DedupAcks>> dedup_;
};

Report MustRun(const Workload& w, System& sys) {
  Result<Report> r = RunBenchmark(w, sys, Quiet());
  INFO("run: " << r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

}  // namespace

TEST_CASE("workload validation names the option", "[bench][driver]") {
  Workload w = MemWorkload(1, 1, 1, 10);
  REQUIRE_OK(ValidateWorkload(w));
  auto bad = [&](auto mutate, const std::string& needle) {
    Workload x = w;
    mutate(x);
    Status s = ValidateWorkload(x);
    INFO(s.ToString());
    REQUIRE(s.is(Errc::kInvalidArgument));
    REQUIRE(std::string(s.context()).find(needle) != std::string::npos);
  };
  bad([](Workload& x) { x.producers = 0; }, "--producers");
  bad([](Workload& x) { x.producers = kMaxWorkers + 1; }, "--producers");
  bad([](Workload& x) { x.consumers = -1; }, "--consumers");
  bad([](Workload& x) { x.partitions = 0; }, "--partitions");
  bad([](Workload& x) { x.message_size = 15; }, "--size");
  bad([](Workload& x) { x.count = 0; }, "--count");
  bad([](Workload& x) { x.duration = std::chrono::milliseconds(5); }, "--count");
  bad([](Workload& x) { x.window = 0; }, "--window");
  bad([](Workload& x) { x.acks = 2; }, "--acks");
  bad([](Workload& x) { x.mode = "both"; }, "--mode");
  bad([](Workload& x) { x.consumers = 2; }, "--consumers");
  bad([](Workload& x) { x.fanout = true; }, "--fanout");  // mem: one reader per partition
  bad(
      [](Workload& x) {
        x.system = "rdmq";
        x.fanout = true;
        x.consumers = 0;
      },
      "--fanout");
  bad(
      [](Workload& x) {
        x.system = "rdmq";
        x.fanout = true;
        x.count = 0;
        x.duration = std::chrono::milliseconds(100);
      },
      "--fanout");
  Workload fan = w;
  fan.system = "kafka";
  fan.fanout = true;
  fan.consumers = 4;  // more consumers than partitions: each reads every one
  REQUIRE_OK(ValidateWorkload(fan));
  for (int c = 0; c < 4; ++c) CHECK(ConsumerPartitions(fan, c) == std::vector<int>{0});
  fan.partitions = 3;
  CHECK(ConsumerPartitions(fan, 2) == (std::vector<int>{0, 1, 2}));
  bad(
      [](Workload& x) {
        x.system = "rdmq";
        x.producers = 2;
      },
      "--mode exclusive");
}

TEST_CASE("every partition has a producer and exactly one consumer", "[bench][driver]") {
  for (int producers : {1, 2, 3, 8}) {
    for (int partitions : {1, 2, 5, 16}) {
      for (int consumers = 1; consumers <= partitions && consumers <= 4; ++consumers) {
        Workload w = MemWorkload(producers, consumers, partitions, 10);
        std::set<int> written;
        for (int p = 0; p < producers; ++p) {
          const auto parts = ProducerPartitions(w, p);
          REQUIRE(!parts.empty());
          for (int x : parts) {
            REQUIRE(x >= 0);
            REQUIRE(x < partitions);
            written.insert(x);
          }
          if (partitions >= producers) {  // exclusive mode works: no partition has two producers
            for (int q = 0; q < p; ++q) {
              for (int x : ProducerPartitions(w, q)) REQUIRE(std::count(parts.begin(), parts.end(), x) == 0);
            }
          }
        }
        REQUIRE(static_cast<int>(written.size()) == partitions);
        std::multiset<int> read;
        for (int c = 0; c < consumers; ++c) {
          for (int x : ConsumerPartitions(w, c)) read.insert(x);
        }
        REQUIRE(static_cast<int>(read.size()) == partitions);
        for (int x = 0; x < partitions; ++x) REQUIRE(read.count(x) == 1);
      }
    }
  }
}

TEST_CASE("threads: every record produced is acknowledged and consumed once", "[bench][driver]") {
  struct Shape {
    int producers, consumers, partitions;
    uint32_t window;
  };
  for (Shape s : {Shape{1, 1, 1, 1}, Shape{1, 1, 1, 1000}, Shape{2, 2, 4, 16}, Shape{3, 1, 2, 100},
                  Shape{4, 0, 4, 8}}) {
    Workload w = MemWorkload(s.producers, s.consumers, s.partitions, 5000);
    w.window = s.window;
    auto sys = MakeMemSystem(w);
    Report r = MustRun(w, *sys);
    INFO("producers " << s.producers << " consumers " << s.consumers << " partitions " << s.partitions);
    CHECK(r.sent == 5000u * s.producers);
    CHECK(r.acked == r.sent);
    // Every record timed with up to 64 in flight; 1 in 16 above.
    CHECK(r.latency_sample_every == (s.window <= 64 ? 1u : 16u));
    const uint64_t timed = r.ack_latency.count();
    if (r.latency_sample_every == 1) {
      CHECK(timed == r.sent);
    } else {
      CHECK(timed > r.sent / 32);
      CHECK(timed < r.sent / 8);
    }
    if (s.consumers > 0) {
      CHECK(r.consumed == r.sent);
      CHECK(r.expected == r.sent);
      CHECK(r.e2e_latency.count() == timed);  // the same records, timed at both ends
    } else {
      CHECK(r.consumed == 0);
    }
    CHECK(r.missing == 0);
    CHECK(r.duplicates == 0);
    CHECK(r.corrupt == 0);
    CHECK(r.CountsOk());
    CHECK(r.produce_s > 0);
    CHECK(!r.timeline.empty());
  }
}

TEST_CASE("processes: forked workers report through shared memory", "[bench][driver]") {
  Workload w = MemWorkload(2, 2, 2, 20000);
  w.processes = true;
  auto sys = MakeMemSystem(w);
  Report r = MustRun(w, *sys);
  CHECK(r.sent == 40000);
  CHECK(r.acked == 40000);
  CHECK(r.consumed == 40000);
  CHECK(r.e2e_latency.count() == 40000);
  CHECK(r.CountsOk());
  CHECK(r.client_cpu.total() > 0);  // summed from the children
}

TEST_CASE("duration mode stops producers at the deadline", "[bench][driver]") {
  Workload w = MemWorkload(1, 1, 1, 0);
  w.duration = std::chrono::milliseconds(200);
  auto sys = MakeMemSystem(w);
  Report r = MustRun(w, *sys);
  CHECK(r.sent > 0);
  CHECK(r.CountsOk());
  CHECK(r.produce_s < 5.0);  // stopped, not run forever (generous: the machine is shared)
}

// 1000 records through a system with `fault`, timing 1 record in `sample`.
Report RunFaulty(Fault fault, uint32_t sample) {
  Workload w = MemWorkload(1, 1, 1, 1000);
  FaultySystem sys(w, fault);
  RunOptions o = Quiet();
  o.latency_sample = sample;
  Result<Report> r = RunBenchmark(w, sys, o);
  REQUIRE_OK(r);
  return *r;
}

TEST_CASE("records lost after their ack are reported missing", "[bench][driver]") {
  for (uint32_t sample : {1u, 16u}) {  // untimed records are checked as well
    const Report r = RunFaulty(Fault::kDropEvery100, sample);
    CHECK(r.acked == 1000);
    CHECK(r.consumed == 990);
    CHECK(r.missing == 10);
    CHECK(!r.CountsOk());
  }
}

TEST_CASE("records stored twice are reported as duplicates", "[bench][driver]") {
  for (uint32_t sample : {1u, 16u}) {
    const Report r = RunFaulty(Fault::kDuplicateEvery100, sample);
    CHECK(r.acked == 1000);
    CHECK(r.consumed == 1010);
    CHECK(r.duplicates == 10);
    CHECK(!r.CountsOk());
  }
}

TEST_CASE("failed acks are counted with the first error", "[bench][driver]") {
  Workload w = MemWorkload(1, 1, 1, 1000);
  FaultySystem sys(w, Fault::kAckErrorEvery10);
  Report r = MustRun(w, sys);
  CHECK(r.ack_errors == 100);
  CHECK(r.acked == 900);
  CHECK(r.first_error.find("injected ack error") != std::string::npos);
  CHECK(!r.CountsOk());
}

TEST_CASE("a failing Send fails the run with the producer's error", "[bench][driver]") {
  Workload w = MemWorkload(1, 1, 1, 1000);
  FaultySystem sys(w, Fault::kFailSendAt50);
  Result<Report> r = RunBenchmark(w, sys, Quiet());
  REQUIRE(!r.ok());
  CHECK(r.status().ToString().find("producer 0") != std::string::npos);
  CHECK(r.status().ToString().find("injected send failure") != std::string::npos);
}

TEST_CASE("a consumer that cannot connect fails the run before it starts", "[bench][driver]") {
  for (bool processes : {false, true}) {
    Workload w = MemWorkload(1, 1, 1, 1000);
    w.processes = processes;
    FaultySystem sys(w, Fault::kFailOpenConsumer);
    Result<Report> r = RunBenchmark(w, sys, Quiet());
    REQUIRE(!r.ok());
    CHECK(r.status().ToString().find("open consumer 0") != std::string::npos);
    CHECK(r.status().ToString().find("cannot connect") != std::string::npos);
  }
}

TEST_CASE("the JSON result feeds the table with ratios against the reference", "[bench][report]") {
  Workload w = MemWorkload(1, 1, 1, 2000);
  auto sys = MakeMemSystem(w);
  Report r = MustRun(w, *sys);
  nlohmann::json j = ReportJson(r);
  REQUIRE(j["ok"] == true);
  REQUIRE(j["counts"]["sent"] == 2000);
  REQUIRE(j["latency_ns"]["ack"]["count"] == 2000);
  REQUIRE(j["latency_ns"]["e2e"].contains("p99_9"));
  TableRow row = RowFromJson(j);
  REQUIRE(row.name == "mem");
  REQUIRE(row.records_per_s == Approx(r.produce_records_per_s()));
  REQUIRE(row.ok);

  // Two systems, same workload and class: the second gets a ratio against the first.
  TableRow ref = row;
  ref.name = "rdmq";
  ref.records_per_s = row.records_per_s * 4;
  ref.ack_p50_us = 1;
  row.ack_p50_us = 3;
  rdmq::test::TempDir dir;
  const std::string path = (dir / "table.txt").string();
  std::FILE* f = std::fopen(path.c_str(), "w+");
  REQUIRE(f != nullptr);
  PrintTable({ref, row}, "rdmq", f);
  std::rewind(f);
  std::string text(8192, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  INFO(text);
  CHECK(text.find("reference") != std::string::npos);
  CHECK(text.find("4.0x rate, 3.0x p50") != std::string::npos);

  // A malformed result file is an error, not a crash; missing fields read as zero.
  const std::string bad = (dir / "bad.json").string();
  std::FILE* b = std::fopen(bad.c_str(), "w");
  std::fputs("{\"system\": \"x\", \"workload\": 3", b);
  std::fclose(b);
  CHECK(ReadJson(bad).status().is(Errc::kCorruption));
  TableRow empty = RowFromJson(nlohmann::json::parse("{\"system\": \"x\", \"produce\": 7}"));
  CHECK(empty.records_per_s == 0);
  CHECK(!empty.ok);
}
