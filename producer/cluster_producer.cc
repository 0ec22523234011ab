// ClusterProducer (cluster_producer.h): routing records to the Core of their partition's leader,
// and moving a partition's batches when its leader moves.
#include "producer/cluster_producer.h"

#include <map>
#include <random>
#include <set>
#include <thread>

#include "producer/future.h"
#include "rdmq/client/routes.h"
#include "rdmq/common/log.h"
#include "rdmq/producer/partitioner.h"

namespace rdmq::producer {

namespace {

using client::BrokerAddress;
using client::PartitionRoute;
using client::Routes;
using protocol::Api;
using protocol::WireError;

// How often the watcher looks for batches stranded at a broker that is gone or refuses them.
constexpr auto kWatchInterval = std::chrono::milliseconds(250);

uint32_t RandomNumber() {
  thread_local std::mt19937 rng{std::random_device{}()};
  return rng();
}

std::vector<BrokerAddress> LiveBrokers(const protocol::DescribeClusterResponse& c) {
  std::vector<BrokerAddress> out;
  for (const auto& b : c.brokers) out.push_back({b.id, b.control});
  return out;
}

class ClusterProducer final : public Producer {
 public:
  ClusterProducer(const ProducerConfig& config, std::shared_ptr<Core> first, int32_t first_broker)
      : cfg_(config), routes_(config.batch_size) {
    id_ = first->producer_id();
    epoch_ = first->producer_epoch();
    cores_[first_broker] = std::move(first);
    watcher_ = std::thread([this] { Watch(); });
  }
  ~ClusterProducer() override {
    if (!closed_.load()) (void)Close(cfg_.delivery_timeout);
    StopWatching();
  }
  void SetBrokers(const protocol::DescribeClusterResponse& c) { routes_.SetBrokers(LiveBrokers(c)); }

  SendFuture Send(const ProducerRecord& record) override {
    SendFuture f;
    Status s = Dispatch(record, nullptr, &f);
    if (!s.ok()) return FailedFuture(std::move(s));
    return f;  // moved (a conditional expression would copy it: a reference count up and down)
  }
  Status Send(const ProducerRecord& record, SendCallback callback) override {
    return Dispatch(record, &callback, nullptr);
  }

  // Every Core's records acknowledged; again while partitions moved between Cores meanwhile
  // (a Core already flushed may have taken another's batches).
  Status Flush(std::chrono::milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    while (true) {
      const uint64_t moves = moves_.load();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      Status s = OnEachCore(std::max(left, std::chrono::milliseconds(0)),
                            [](Core& core, std::chrono::milliseconds l) { return core.Flush(l); });
      if (moves_.load() == moves || Clock::now() >= deadline) return s;
    }
  }
  Status Close(std::chrono::milliseconds timeout) override {
    if (closed_.exchange(true)) return Status(Errc::kFailedPrecondition, "the producer is closed");
    // Flushed first, with partitions still following their leaders; then every Core closes.
    const auto deadline = Clock::now() + timeout;
    Status s = Flush(timeout);
    StopWatching();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    Status closed = OnEachCore(std::max(left, std::chrono::milliseconds(0)),
                               [](Core& core, std::chrono::milliseconds l) { return core.Close(l); });
    return s.ok() ? closed : s;
  }
  Result<int32_t> PartitionCount(std::string_view topic) override {
    if (auto n = routes_.PartitionCount(topic)) return *n;
    RDMQ_RETURN_IF_ERROR(Follow(std::string(topic)));
    return *routes_.PartitionCount(topic);
  }

 private:
  // Routes the record and sends it through its leader's Core. NOT_LEADER (the route is stale, or
  // the leader is deposed and the next not elected yet) and UNAVAILABLE (the leader cannot be
  // reached: it died) make it ask where the topic is led again and route the record once more:
  // at once the first time, then every retry.backoff.ms, the Send blocking up to max.block.ms.
  Status Dispatch(const ProducerRecord& r, SendCallback* cb, SendFuture* fut) {
    if (closed_.load(std::memory_order_acquire))
      return Status(Errc::kFailedPrecondition, "the producer is closed");
    const auto deadline = Clock::now() + cfg_.max_block;
    for (int attempt = 0;; ++attempt) {
      ProducerRecord routed = r;
      Result<Core*> core = Route(routed);
      Status s = core.ok() ? (*core)->Send(routed, cb, fut) : core.status();
      const bool moved = s.is(WireError::kNotLeader) || s.is(Errc::kUnavailable);
      if (!moved || Clock::now() >= deadline || closed_.load()) return s;
      RDMQ_LOG(kDebug, "producer", "the partition's leader is elsewhere or unreachable; asking again")
          .kv("topic", r.topic)
          .kv("partition", routed.partition)
          .kv("error", s);
      if (attempt > 0 || !s.is(WireError::kNotLeader)) std::this_thread::sleep_for(cfg_.client.retry_backoff);
      if (Status again = Follow(std::string(r.topic)); !again.ok()) {
        RDMQ_LOG(kDebug, "producer", "asking where a topic's partitions are led failed").kv("error", again);
      }
    }
  }

  // Picks the record's partition (when it names none) and the Core of its leader: one look at the
  // routes per record, a second only for a topic not routed yet or a partition beyond the count
  // known (the topic may have grown).
  Result<Core*> Route(ProducerRecord& r) {
    const std::optional<uint32_t> key_hash = r.key ? std::optional<uint32_t>(KeyHash(*r.key)) : std::nullopt;
    const size_t bytes = r.value ? r.value->size() : 0;
    auto target = routes_.Resolve(r.topic, r.partition, key_hash, bytes, RandomNumber());
    if (!target.ok() &&
        (target.status().is(Errc::kNotFound) || target.status().is(WireError::kUnknownPartition))) {
      RDMQ_RETURN_IF_ERROR(Follow(std::string(r.topic)));
      target = routes_.Resolve(r.topic, r.partition, key_hash, bytes, RandomNumber());
    }
    if (!target.ok()) return target.status();
    r.partition = target->partition;
    return CoreOf(target->broker);
  }

  // Asks where the topic's partitions are led and routes them there. A partition whose route
  // changes moves from the Core it was routed to (its batches and sequences) to the new one
  // first; one whose new broker cannot be reached, or that has no leader now, stays where it was.
  Status Follow(const std::string& topic) {
    MutexLock follow(follow_mu_);
    RDMQ_ASSIGN_OR_RETURN(auto d, (Ask<protocol::DescribeTopicResponse>(Api::kDescribeTopic,
                                                                        protocol::TopicNameRequest{topic})));
    std::vector<PartitionRoute> parts(d.partitions.size());
    for (const auto& p : d.partitions) {
      const auto i = static_cast<size_t>(p.partition.value());
      if (i < parts.size()) parts[i] = PartitionRoute{p.leader, p.replicas};
    }
    RDMQ_RETURN_IF_ERROR(RefreshBrokers());
    const std::vector<PartitionRoute> old = routes_.Partitions(topic).value_or(std::vector<PartitionRoute>{});
    for (size_t i = 0; i < parts.size() && i < old.size(); ++i) {
      const int32_t from = old[i].destination();
      if (from < 0 || from == parts[i].destination()) continue;
      if (parts[i].leader < 0 || !Move(topic, PartitionId(static_cast<int32_t>(i)), from, parts[i].leader)) {
        parts[i] = old[i];  // stays where its records are until it has a leader that can be reached
      }
    }
    routes_.SetTopic(topic, std::move(parts));
    return Status::Ok();
  }

  // Moves partition `p` of `topic` from the Core of broker `from` (if there is one) to that of
  // `to`; false when `to` cannot be reached or does not know the topic (nothing moved).
  bool Move(const std::string& topic, PartitionId p, int32_t from, int32_t to) {
    std::shared_ptr<Core> old = Existing(from);
    auto core = CoreOf(to);
    Status s = core.status();
    if (s.ok()) s = (*core)->PartitionCount(topic).status();
    if (!s.ok()) {
      RDMQ_LOG(kDebug, "producer", "the partition's new leader cannot be reached yet")
          .kv("partition", topic + "-" + std::to_string(p.value()))
          .kv("broker", to)
          .kv("error", s);
      return false;
    }
    if (old) {
      RDMQ_LOG(kInfo, "producer", "following a partition to its new leader")
          .kv("partition", topic + "-" + std::to_string(p.value()))
          .kv("from", from)
          .kv("to", to);
      (*core)->Adopt(topic, p, old->Release(topic, p));
      moves_.fetch_add(1);
    }
    return true;
  }

  std::shared_ptr<Core> Existing(int32_t broker) {
    MutexLock lock(mu_);
    auto it = cores_.find(broker);
    return it == cores_.end() ? nullptr : it->second;
  }

  // The Core of `broker`, connected on first use (as the same producer id and epoch as the
  // others). Cores live as long as the producer.
  Result<Core*> CoreOf(int32_t broker) {
    if (std::shared_ptr<Core> c = Existing(broker)) return c.get();
    MutexLock dial(dial_mu_);  // one new connection at a time; others wait for it
    if (std::shared_ptr<Core> c = Existing(broker)) return c.get();
    Result<std::string> address = routes_.AddressOf(broker);
    if (!address.ok()) {
      RDMQ_RETURN_IF_ERROR(RefreshBrokers());
      address = routes_.AddressOf(broker);
    }
    if (!address.ok()) return address.status();
    ProducerConfig cfg = cfg_;
    cfg.client.bootstrap = *address;
    auto core = std::make_shared<Core>(cfg);
    core->ShareIdentity(id_, epoch_);
    RDMQ_RETURN_IF_ERROR(core->Init().WithContext("connecting to broker " + std::to_string(broker)));
    RDMQ_LOG(kInfo, "producer", "connected to another broker of the cluster")
        .kv("broker", broker)
        .kv("address", *address);
    if (closed_.load()) {
      (void)core->Close(std::chrono::milliseconds(0));
      return Status(Errc::kFailedPrecondition, "the producer is closed");
    }
    MutexLock lock(mu_);
    return (cores_[broker] = std::move(core)).get();
  }

  // fn(core, time left) on every Core, all within `timeout`; the first error.
  template <class Fn>
  Status OnEachCore(std::chrono::milliseconds timeout, Fn fn) {
    const auto deadline = Clock::now() + timeout;
    Status first;
    for (const auto& core : Cores()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      Status s = fn(*core, std::max(left, std::chrono::milliseconds(0)));
      if (first.ok()) first = s;
    }
    return first;
  }
  std::vector<std::shared_ptr<Core>> Cores() {
    MutexLock lock(mu_);
    std::vector<std::shared_ptr<Core>> out;
    for (const auto& [id, core] : cores_) out.push_back(core);
    return out;
  }

  // One metadata call through the first connected broker that answers; when none does (the
  // brokers written to are gone), through a new connection to another live broker.
  template <class Resp, class Req>
  Result<Resp> Ask(Api api, const Req& req) {
    Status last(Errc::kUnavailable, "no broker of the cluster is connected");
    std::set<const Core*> asked;
    for (const auto& core : Cores()) {
      asked.insert(core.get());
      if (!core->connection().connected()) continue;
      auto r = core->connection().Call<Resp>(api, req);
      if (r.ok() || !r.status().is(Errc::kUnavailable)) return r;
      last = r.status();
    }
    for (int32_t broker : routes_.Brokers()) {
      auto core = CoreOf(broker);
      if (!core.ok()) {
        last = core.status();
        continue;
      }
      if (asked.count(*core) != 0 || !(*core)->connection().connected()) continue;
      auto r = (*core)->connection().Call<Resp>(api, req);
      if (r.ok() || !r.status().is(Errc::kUnavailable)) return r;
      last = r.status();
    }
    return last;
  }
  Status RefreshBrokers() {
    RDMQ_ASSIGN_OR_RETURN(auto c,
                          (Ask<protocol::DescribeClusterResponse>(Api::kDescribeCluster, protocol::Empty{})));
    routes_.SetBrokers(LiveBrokers(c));
    return Status::Ok();
  }

  // The watcher thread: topics with batches stranded at a broker that is gone or refuses them
  // are followed to their leaders.
  void Watch() {
    UniqueLock lock(watch_mu_);
    while (!stop_) {
      watch_cv_.WaitFor(lock, kWatchInterval);
      if (stop_) break;
      lock.Unlock();
      std::set<std::string> topics;
      for (const auto& core : Cores()) {
        for (std::string& t : core->Stranded()) topics.insert(std::move(t));
      }
      for (const std::string& t : topics) {
        if (Status s = Follow(t); !s.ok()) {
          RDMQ_LOG(kDebug, "producer", "asking where a topic's partitions are led failed")
              .kv("topic", t)
              .kv("error", s);
        }
      }
      lock.Lock();
    }
  }
  void StopWatching() {
    {
      UniqueLock lock(watch_mu_);
      stop_ = true;
    }
    watch_cv_.NotifyAll();
    if (watcher_.joinable() && watcher_.get_id() != std::this_thread::get_id()) watcher_.join();
  }

  const ProducerConfig cfg_;
  Routes routes_;
  ProducerId id_ = kNoProducerId;  // every Core's (the first broker's InitProducerId)
  int16_t epoch_ = 0;
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> moves_{0};  // partitions moved between Cores so far
  Mutex follow_mu_ ACQUIRED_BEFORE(dial_mu_);
  Mutex dial_mu_ ACQUIRED_BEFORE(mu_);
  Mutex mu_;
  std::map<int32_t, std::shared_ptr<Core>> cores_ GUARDED_BY(mu_);
  Mutex watch_mu_;
  CondVar watch_cv_;
  bool stop_ = false;  // under watch_mu_
  std::thread watcher_;
};

}  // namespace

Result<std::unique_ptr<Producer>> MakeClusterProducer(const ProducerConfig& config,
                                                      std::shared_ptr<Core> first,
                                                      const protocol::DescribeClusterResponse& cluster) {
  auto p = std::make_unique<ClusterProducer>(config, std::move(first), cluster.this_broker);
  p->SetBrokers(cluster);
  return std::unique_ptr<Producer>(std::move(p));
}

}  // namespace rdmq::producer
