// ClusterProducer (cluster_producer.h): routing records to the Core of their partition's leader.
#include "producer/cluster_producer.h"

#include <map>
#include <random>

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
    cores_[first_broker] = std::move(first);
  }
  ~ClusterProducer() override {
    if (!closed_.load()) (void)Close(cfg_.delivery_timeout);
  }
  void SetBrokers(const protocol::DescribeClusterResponse& c) { routes_.SetBrokers(LiveBrokers(c)); }

  SendFuture Send(const ProducerRecord& record) override {
    SendFuture f;
    Status s = Dispatch(record, nullptr, &f);
    return s.ok() ? f : FailedFuture(std::move(s));
  }
  Status Send(const ProducerRecord& record, SendCallback callback) override {
    return Dispatch(record, &callback, nullptr);
  }

  Status Flush(std::chrono::milliseconds timeout) override {
    return OnEachCore(timeout, [](Core& core, std::chrono::milliseconds left) { return core.Flush(left); });
  }
  Status Close(std::chrono::milliseconds timeout) override {
    if (closed_.exchange(true)) return Status(Errc::kFailedPrecondition, "the producer is closed");
    return OnEachCore(timeout, [](Core& core, std::chrono::milliseconds left) { return core.Close(left); });
  }
  Result<int32_t> PartitionCount(std::string_view topic) override {
    if (auto n = routes_.PartitionCount(topic)) return *n;
    RDMQ_RETURN_IF_ERROR(Describe(topic));
    return *routes_.PartitionCount(topic);
  }

 private:
  // Routes the record and sends it through its leader's Core; after NOT_LEADER the topic's
  // routes are asked for again and the record routed once more.
  Status Dispatch(const ProducerRecord& r, SendCallback* cb, SendFuture* fut) {
    if (closed_.load(std::memory_order_acquire))
      return Status(Errc::kFailedPrecondition, "the producer is closed");
    for (int attempt = 0;; ++attempt) {
      ProducerRecord routed = r;
      RDMQ_ASSIGN_OR_RETURN(Core * core, Route(routed));
      Status s = core->Send(routed, cb, fut);
      if (s.ok() || !s.is(WireError::kNotLeader) || attempt == 1) return s;
      RDMQ_LOG(kDebug, "producer", "not the leader; asking for the topic's leaders again")
          .kv("topic", r.topic)
          .kv("partition", routed.partition);
      RDMQ_RETURN_IF_ERROR(Describe(r.topic));
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
      RDMQ_RETURN_IF_ERROR(Describe(r.topic));
      target = routes_.Resolve(r.topic, r.partition, key_hash, bytes, RandomNumber());
    }
    if (!target.ok()) return target.status();
    r.partition = target->partition;
    return CoreOf(target->broker);
  }

  // The Core of `broker`, connected on first use. Cores live as long as the producer.
  Result<Core*> CoreOf(int32_t broker) {
    {
      MutexLock lock(mu_);
      if (auto it = cores_.find(broker); it != cores_.end()) return it->second.get();
    }
    MutexLock dial(dial_mu_);  // one new connection at a time; others wait for it
    {
      MutexLock lock(mu_);
      if (auto it = cores_.find(broker); it != cores_.end()) return it->second.get();
    }
    Result<std::string> address = routes_.AddressOf(broker);
    if (!address.ok()) {
      RDMQ_RETURN_IF_ERROR(RefreshBrokers());
      address = routes_.AddressOf(broker);
    }
    if (!address.ok()) return address.status();
    ProducerConfig cfg = cfg_;
    cfg.client.bootstrap = *address;
    auto core = std::make_shared<Core>(cfg);
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

  // One metadata call through the first connected broker that answers.
  template <class Resp, class Req>
  Result<Resp> Ask(Api api, const Req& req) {
    Status last(Errc::kUnavailable, "no broker of the cluster is connected");
    for (const auto& core : Cores()) {
      if (!core->connection().connected()) continue;
      auto r = core->connection().Call<Resp>(api, req);
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
  // The topic's leaders, and the live brokers.
  Status Describe(std::string_view topic) {
    RDMQ_ASSIGN_OR_RETURN(auto d, (Ask<protocol::DescribeTopicResponse>(
                                      Api::kDescribeTopic, protocol::TopicNameRequest{std::string(topic)})));
    std::vector<PartitionRoute> parts(d.partitions.size());
    for (const auto& p : d.partitions) {
      const auto i = static_cast<size_t>(p.partition.value());
      if (i < parts.size()) parts[i] = PartitionRoute{p.leader, p.replicas};
    }
    routes_.SetTopic(std::string(topic), std::move(parts));
    return RefreshBrokers();
  }

  const ProducerConfig cfg_;
  Routes routes_;
  std::atomic<bool> closed_{false};
  Mutex dial_mu_ ACQUIRED_BEFORE(mu_);
  Mutex mu_;
  std::map<int32_t, std::shared_ptr<Core>> cores_ GUARDED_BY(mu_);
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
