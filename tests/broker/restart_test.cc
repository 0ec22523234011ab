// End-to-end: the broker killed (SIGKILL) and restarted on the same data directory and addresses
// while producers send and a consumer reads. Clients reconnect (docs/protocol.md, "Clients when
// the broker fails"): the idempotent producers report no error and store every record exactly
// once, in per-key order, and the consumer carries on from its position.
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "e2e_util.h"
#include "rdmq/client/admin.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/producer/producer.h"

namespace rdmq::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Got {
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key;
  std::string value;
};

client::ClientOptions Quick(const BrokerProcess& b) {
  client::ClientOptions o = b.Options();
  o.reconnect_backoff = 10ms;
  o.reconnect_backoff_max = 200ms;
  return o;
}

// A consumer over every partition of `topic` from the beginning, until it holds `want` records,
// `stop` is set and nothing new came for a while, or `deadline`.
std::vector<Got> ReadAll(const BrokerProcess& b, const std::string& topic, int32_t partitions, size_t want,
                         Clock::time_point deadline, const std::atomic<bool>* stop, Status* error) {
  std::vector<Got> out;
  consumer::ConsumerConfig cc;
  cc.client = Quick(b);
  auto c = consumer::Consumer::Create(cc);
  if (!c.ok()) {
    *error = c.status();
    return out;
  }
  std::vector<client::TopicPartition> tps;
  for (int32_t p = 0; p < partitions; ++p) tps.push_back({topic, p});
  if (Status s = (*c)->Assign(tps); !s.ok()) {
    *error = s;
    return out;
  }
  int idle = 0;
  while (Clock::now() < deadline && out.size() < want && idle < 100) {
    auto recs = (*c)->Poll(50ms);
    if (!recs.ok()) {
      *error = recs.status();
      return out;
    }
    if (recs->empty() && stop != nullptr && stop->load()) ++idle;
    if (!recs->empty()) idle = 0;
    for (const auto& r : *recs) {
      out.push_back(
          {r.partition, r.offset, std::string(r.key.value_or("")), std::string(r.value.value_or(""))});
    }
  }
  return out;
}

// A consumer-group member subscribed to `topic` that commits after every Poll, until `stop` is set
// and nothing new came for a while, or `deadline`. Returns what it read; `rewinds` gets every
// place it read a partition again (after a broker restart the member is fenced, rejoins and starts
// over from the group's committed offset), `commits` every position it tried to commit.
std::vector<Got> GroupReadAll(const BrokerProcess& b, const std::string& topic, Clock::time_point deadline,
                              const std::atomic<bool>* stop, Status* error,
                              std::vector<std::pair<int32_t, int64_t>>* rewinds,
                              std::set<std::pair<int32_t, int64_t>>* commits) {
  std::vector<Got> out;
  consumer::ConsumerConfig cc;
  cc.client = Quick(b);
  cc.group_id = "restart";
  cc.session_timeout = 3s;
  cc.enable_auto_commit = false;
  auto c = consumer::Consumer::Create(cc);
  if (!c.ok()) {
    *error = c.status();
    return out;
  }
  if (Status s = (*c)->Subscribe({topic}); !s.ok()) {
    *error = s;
    return out;
  }
  std::map<int32_t, int64_t> next;
  int idle = 0;
  while (Clock::now() < deadline && idle < 100) {
    auto recs = (*c)->Poll(50ms);
    if (!recs.ok()) {
      *error = recs.status();
      return out;
    }
    if (recs->empty() && stop->load()) ++idle;
    if (!recs->empty()) idle = 0;
    for (const auto& r : *recs) {
      const auto it = next.find(r.partition);
      if (it != next.end() && r.offset < it->second) rewinds->emplace_back(r.partition, r.offset);
      next[r.partition] = r.offset + 1;
      out.push_back(
          {r.partition, r.offset, std::string(r.key.value_or("")), std::string(r.value.value_or(""))});
    }
    if (!recs->empty()) {
      // Every position sent in a commit counts: the broker may have stored one whose answer the
      // restart cut off.
      for (const auto& tp : (*c)->Assignment()) {
        auto pos = (*c)->Position(tp);
        if (pos.ok()) commits->emplace(tp.partition, *pos);
      }
      (void)(*c)->CommitSync();
    }
  }
  (*c)->Close();
  return out;
}

// Every record exactly once, offsets dense per partition, each key's records in send order.
void CheckExactlyOnce(const std::vector<Got>& recs, const std::map<std::string, long>& sent_per_key) {
  std::map<int32_t, int64_t> next_offset;
  std::map<std::string, long> next_seq;
  size_t bad = 0;
  for (const Got& g : recs) {
    if (g.offset != next_offset[g.partition]) {
      if (++bad < 5)
        FAIL_CHECK("partition " << g.partition << ": offset " << g.offset << ", expected "
                                << next_offset[g.partition] << " (repeated or lost)");
    }
    next_offset[g.partition] = g.offset + 1;
    // value = key + "#" + sequence of the record within its key
    const long seq = std::stol(g.value.substr(g.value.rfind('#') + 1));
    if (seq != next_seq[g.key]) {
      if (++bad < 5) FAIL_CHECK("key " << g.key << ": record " << seq << ", expected " << next_seq[g.key]);
    }
    next_seq[g.key] = seq + 1;
  }
  CHECK(bad == 0);
  CHECK(next_seq == sent_per_key);
}

// Two idempotent producers send keyed records while the broker is killed and restarted three
// times; a consumer reads along. (Acceptance tests 1 and 3 of issue 12.) Shared: both producers
// write every partition (by key). Exclusive: a partition has one writer at a time, so each
// producer writes its own partition (keyed records all the same).
void RestartThrice(const std::string& fabric, producer::PartitionMode mode) {
  TempDir dir;
  START_BROKER(broker, dir, fabric);
  broker.PinAddresses();
  constexpr int kProducers = 2;
  constexpr int kKeys = 6;
  constexpr int32_t kPartitions = 3;
  {
    auto admin = client::AdminClient::Connect(broker.Options());
    REQUIRE_OK(admin);
    REQUIRE_OK((*admin)->CreateTopic("r", {{"partitions", std::to_string(kPartitions)}}));
  }
  const auto deadline = Clock::now() + 120s;
  std::atomic<bool> restarts_done{false};
  std::atomic<bool> producers_done{false};
  std::atomic<long> failed{0};
  std::mutex mu;
  std::string first_error;
  std::map<std::string, long> sent_per_key;
  std::vector<Status> flushed(kProducers);

  std::vector<std::thread> producers;
  for (int i = 0; i < kProducers; ++i) {
    producers.emplace_back([&, i] {
      producer::ProducerConfig pc;
      pc.client = Quick(broker);
      pc.enable_idempotence = true;
      pc.mode = mode;
      pc.linger = 1ms;
      pc.delivery_timeout = 60s;
      auto p = producer::Producer::Create(pc);
      if (!p.ok()) {
        std::lock_guard lock(mu);
        flushed[i] = p.status();
        return;
      }
      std::map<std::string, long> seq;
      long after = 0;  // records sent since the last restart
      // Bounded in count and time; goes on a while after the last restart.
      for (long n = 0; n < 200'000 && Clock::now() < deadline && after < 300; ++n) {
        if (restarts_done.load()) ++after;
        const std::string key = "p" + std::to_string(i) + "-k" + std::to_string(n % kKeys);
        const std::string value = key + "#" + std::to_string(seq[key]++);
        producer::ProducerRecord r;
        r.topic = "r";
        if (mode == producer::PartitionMode::kExclusive) r.partition = i;
        r.key = key;
        r.value = value;
        Status s = (*p)->Send(r, [&](const Result<producer::RecordMetadata>& md) {
          if (md.ok()) return;
          failed.fetch_add(1);
          std::lock_guard lock(mu);
          if (first_error.empty()) first_error = md.status().ToString();
        });
        if (!s.ok()) {
          failed.fetch_add(1);
          std::lock_guard lock(mu);
          if (first_error.empty()) first_error = "Send: " + s.ToString();
          --seq[key];
        }
        if (n % 20 == 0) std::this_thread::sleep_for(1ms);
      }
      Status f = (*p)->Flush(40s);
      (void)(*p)->Close(10s);
      std::lock_guard lock(mu);
      flushed[i] = f;
      for (const auto& [k, v] : seq) sent_per_key[k] = v;
    });
  }
  // A consumer reading all along.
  Status read_error;
  std::vector<Got> streamed;
  std::thread reader([&] {
    streamed = ReadAll(broker, "r", kPartitions, SIZE_MAX, deadline, &producers_done, &read_error);
  });
  // And a consumer group's member, committing as it goes.
  Status group_error;
  std::vector<Got> grouped;
  std::vector<std::pair<int32_t, int64_t>> rewinds;
  std::set<std::pair<int32_t, int64_t>> commits;
  std::thread member([&] {
    grouped = GroupReadAll(broker, "r", deadline, &producers_done, &group_error, &rewinds, &commits);
  });

  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(500ms);
    broker.Kill();
    std::this_thread::sleep_for(200ms);
    std::string why;
    const bool started = broker.Start(&why);
    INFO(why);
    REQUIRE(started);
  }
  restarts_done.store(true);
  for (auto& t : producers) t.join();
  producers_done.store(true);
  reader.join();
  member.join();

  INFO("first error: " << first_error);
  CHECK(failed.load() == 0);
  for (const Status& f : flushed) CHECK_OK(f);
  long total = 0;
  for (const auto& [k, v] : sent_per_key) total += v;
  CHECK(total > 0);
  // Read back afterwards with a fresh consumer: exactly once, in key order.
  Status error;
  const std::vector<Got> all =
      ReadAll(broker, "r", kPartitions, static_cast<size_t>(total), Clock::now() + 60s, nullptr, &error);
  CHECK_OK(error);
  CHECK(all.size() == static_cast<size_t>(total));
  CheckExactlyOnce(all, sent_per_key);
  // The consumer that read through the restarts saw the same: nothing lost, nothing repeated.
  CHECK_OK(read_error);
  CHECK(streamed.size() == static_cast<size_t>(total));
  CheckExactlyOnce(streamed, sent_per_key);
  // The group member read everything; where it read a partition again, it started from an
  // offset the group had committed (it resumed from its commits, not from the beginning, unless
  // none had been stored for that partition).
  CHECK_OK(group_error);
  std::set<std::pair<int32_t, int64_t>> distinct;
  for (const Got& g : grouped) distinct.emplace(g.partition, g.offset);
  CHECK(distinct.size() == static_cast<size_t>(total));
  for (const auto& r : rewinds) {
    // From a committed offset, or from the start of the partition when no commit of it was
    // stored before the broker died (auto.offset.reset=earliest).
    INFO("the member read partition " << r.first << " again from offset " << r.second);
    CHECK((commits.count(r) == 1 || r.second == 0));
  }
}

E2E_BOTH(RestartShared,
         "broker killed and restarted three times: idempotent shared producers store every record "
         "once, in key order, and a reading consumer carries on",
         "[e2e][restart]") {
  RestartThrice(fabric, producer::PartitionMode::kShared);
}

E2E_BOTH(RestartExclusive,
         "broker killed and restarted three times: idempotent exclusive producers store every record "
         "once, in key order, and a reading consumer carries on",
         "[e2e][restart]") {
  RestartThrice(fabric, producer::PartitionMode::kExclusive);
}

}  // namespace
}  // namespace rdmq::test
