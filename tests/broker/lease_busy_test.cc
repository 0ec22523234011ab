// Leases that do not strand a partition (issue 12): a broker in this process releases a lease
// whose holder committed nothing for lease.idle.ms, a producer that finds its partition busy
// waits, fails or joins in shared mode as partition.busy says, and a holder whose lease was
// released takes the partition again when it sends. Also the idempotent producer's epoch bump:
// after a batch fails for good, the records behind it go at a new epoch instead of stalling on a
// sequence gap until delivery.timeout.ms.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

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
using protocol::WireError;
using Clock = std::chrono::steady_clock;

using test::Running;

Running Start(const rdmq::test::TempDir& dir, uint32_t idle_ms) {
  BrokerConfig cfg = test::TestConfig(dir);
  cfg.lease_idle_ms = idle_ms;
  return test::Start(cfg);
}

std::unique_ptr<producer::Producer> MakeProducer(const client::ClientOptions& c, producer::PartitionMode mode,
                                                 producer::BusyPolicy busy) {
  producer::ProducerConfig pc;
  pc.client = c;
  pc.client.retry_backoff = 20ms;
  pc.mode = mode;
  pc.busy = busy;
  pc.delivery_timeout = 30s;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  return std::move(*p);
}

// Every record of partition 0 of `topic`: its values in offset order (offsets checked dense).
std::vector<std::string> ReadAll(const client::ClientOptions& c, const std::string& topic, size_t want) {
  consumer::ConsumerConfig cc;
  cc.client = c;
  auto con = consumer::Consumer::Create(cc);
  REQUIRE_OK(con);
  REQUIRE_OK((*con)->Assign({{topic, 0}}));
  std::vector<std::string> out;
  int64_t next = 0;
  const auto deadline = Clock::now() + 20s;
  while (out.size() < want && Clock::now() < deadline) {
    auto recs = (*con)->Poll(50ms);
    REQUIRE_OK(recs);
    for (const auto& r : *recs) {
      CHECK(r.offset == next);
      next = r.offset + 1;
      out.emplace_back(r.value.value_or(""));
    }
  }
  // Nothing more arrives.
  auto more = (*con)->Poll(100ms);
  REQUIRE_OK(more);
  CHECK(more->empty());
  return out;
}

producer::SendFuture Send(producer::Producer& p, const std::string& topic, const std::string& value) {
  return p.Send({.topic = topic, .partition = 0, .value = value});
}

TEST_CASE("an idle exclusive holder does not strand its partition: fail, wait, and taking it back",
          "[broker][lease]") {
  rdmq::test::TempDir dir("rdmq-lease");
  Running r = Start(dir, 500);
  REQUIRE_OK(r.admin->CreateTopic("t", {{"partitions", "1"}}));
  using producer::BusyPolicy;
  using producer::PartitionMode;
  auto holder = MakeProducer(r.client, PartitionMode::kExclusive, BusyPolicy::kFail);
  REQUIRE_OK(Send(*holder, "t", "h1").get());

  // partition.busy=fail: the old answer, at once.
  auto failing = MakeProducer(r.client, PartitionMode::kExclusive, BusyPolicy::kFail);
  auto refused = Send(*failing, "t", "never");
  REQUIRE(refused.wait_for(5s));
  CHECK(refused.get().status().is(WireError::kPartitionBusy));

  // partition.busy=wait: the record waits until the idle holder's lease is released.
  auto waiting = MakeProducer(r.client, PartitionMode::kExclusive, BusyPolicy::kWait);
  const uint64_t idle_before = r.broker->stats().leases_idle;
  auto w1 = Send(*waiting, "t", "w1");
  REQUIRE(w1.wait_for(20s));
  REQUIRE_OK(w1.get());
  CHECK(r.broker->stats().leases_idle > idle_before);

  // The holder sends again: its lease is gone, it waits for the partition (now the waiting
  // producer's, idle in turn) and gets it back without an error.
  auto h2 = Send(*holder, "t", "h2");
  REQUIRE(h2.wait_for(20s));
  REQUIRE_OK(h2.get());
  REQUIRE_OK(holder->Flush(10s));
  REQUIRE_OK(waiting->Flush(10s));

  CHECK(ReadAll(r.client, "t", 3) == std::vector<std::string>{"h1", "w1", "h2"});
  (void)failing->Close(1s);
  REQUIRE_OK(holder->Close(10s));
  REQUIRE_OK(waiting->Close(10s));
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

TEST_CASE("partition.busy=shared: an exclusive producer joins a partition that shared producers write",
          "[broker][lease]") {
  rdmq::test::TempDir dir("rdmq-lease");
  Running r = Start(dir, 0);  // no idle release: the shared writer keeps its lease throughout
  REQUIRE_OK(r.admin->CreateTopic("t", {{"partitions", "1"}}));
  using producer::BusyPolicy;
  using producer::PartitionMode;
  auto shared = MakeProducer(r.client, PartitionMode::kShared, BusyPolicy::kFail);
  REQUIRE_OK(Send(*shared, "t", "s-first").get());
  // The default policy (shared): with a shared lease held, the exclusive producer joins.
  auto joiner = MakeProducer(r.client, PartitionMode::kExclusive, BusyPolicy::kShared);
  constexpr int kEach = 200;
  std::vector<producer::SendFuture> futures;
  for (int i = 0; i < kEach; ++i) {
    futures.push_back(Send(*joiner, "t", "e" + std::to_string(i)));
    futures.push_back(Send(*shared, "t", "s" + std::to_string(i)));
  }
  for (auto& f : futures) {
    REQUIRE(f.wait_for(20s));
    CHECK_OK(f.get());
  }
  // Both kept their leases (the shared one was never released, so the joiner wrote alongside
  // it, not after it).
  CHECK(r.broker->stats().leases_idle == 0);
  const auto values = ReadAll(r.client, "t", 2 * kEach + 1);
  REQUIRE(values.size() == 2 * kEach + 1);
  // Each producer's records once, in its send order.
  std::map<char, int> next;
  std::set<std::string> seen;
  for (const auto& v : values) {
    CHECK(seen.insert(v).second);
    if (v == "s-first") continue;
    CHECK(std::stoi(v.substr(1)) == next[v[0]]++);
  }
  CHECK(next['e'] == kEach);
  CHECK(next['s'] == kEach);
  REQUIRE_OK(joiner->Close(10s));
  REQUIRE_OK(shared->Close(10s));
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

TEST_CASE("an idempotent producer's batch refused for good: the records behind it go at a new epoch",
          "[broker][lease][idempotence]") {
  rdmq::test::TempDir dir("rdmq-lease");
  Running r = Start(dir, 0);
  REQUIRE_OK(r.admin->CreateTopic("t", {{"max.message.bytes", "262144"}}));
  producer::ProducerConfig pc;
  pc.client = r.client;
  pc.enable_idempotence = true;
  pc.delivery_timeout = 60s;  // a stall on the sequence gap would outlast the waits below
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  REQUIRE_OK(Send(**p, "t", "before").get());
  // The producer keeps the old, larger limit: its next large batch reaches the broker, which
  // refuses it by the new one; the records sent right behind it are in later batches.
  REQUIRE_OK(r.admin->AlterTopic("t", {{"max.message.bytes", "16384"}}));
  auto big = Send(**p, "t", std::string(30000, 'b'));
  std::vector<producer::SendFuture> after;
  for (int i = 0; i < 50; ++i) after.push_back(Send(**p, "t", "after" + std::to_string(i)));
  REQUIRE(big.wait_for(20s));
  CHECK(big.get().status().is(WireError::kRecordTooLarge));
  for (auto& f : after) {
    REQUIRE(f.wait_for(20s));
    CHECK_OK(f.get());
  }
  std::vector<std::string> want = {"before"};
  for (int i = 0; i < 50; ++i) want.push_back("after" + std::to_string(i));
  CHECK(ReadAll(r.client, "t", want.size()) == want);
  (void)(*p)->Close(10s);  // reports the refused record again
  r.admin.reset();
  REQUIRE_OK(r.broker->Shutdown());
}

}  // namespace
}  // namespace rdmq::broker
