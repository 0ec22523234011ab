// End-to-end tests: a real rdmq-broker process, producers and consumers in this process (and in
// child processes where a test kills them), on the shm and tcp fabrics.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <thread>

#include "e2e_util.h"
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

producer::ProducerRecord Rec(std::string_view topic, int32_t partition, std::optional<std::string_view> key,
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
    futs.push_back((*p)->Send(Rec("orders", 0, std::nullopt, v)));
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

}  // namespace
}  // namespace rdmq::test
