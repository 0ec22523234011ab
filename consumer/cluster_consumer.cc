// ClusterConsumer (cluster_consumer.h): each assigned partition read through the consumer of its
// leader.
#include "consumer/cluster_consumer.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "rdmq/client/admin.h"
#include "rdmq/client/routes.h"
#include "rdmq/common/log.h"

namespace rdmq::consumer::internal {

namespace {

using Clock = std::chrono::steady_clock;
using client::TopicPartition;

// How long Poll waits in one broker's consumer before it looks at the others again.
constexpr auto kWaitSlice = std::chrono::milliseconds(2);

class ClusterConsumer final : public Consumer {
 public:
  ClusterConsumer(const ConsumerConfig& cfg, std::unique_ptr<Consumer> first, int32_t first_broker,
                  std::unique_ptr<client::AdminClient> admin)
      : cfg_(cfg), admin_(std::move(admin)), routes_(1) {
    subs_[first_broker] = std::move(first);
  }
  ~ClusterConsumer() override { Close(); }

  Status Refresh(const std::set<std::string>& topics) {
    RDMQ_ASSIGN_OR_RETURN(auto cluster, admin_->DescribeCluster());
    std::vector<client::BrokerAddress> live;
    for (const auto& b : cluster.brokers) live.push_back({b.id, b.control});
    routes_.SetBrokers(std::move(live));
    for (const std::string& topic : topics) {
      RDMQ_ASSIGN_OR_RETURN(auto d, admin_->DescribeTopic(topic));
      std::vector<client::PartitionRoute> parts(d.partitions.size());
      for (const auto& p : d.partitions) {
        if (p.partition >= 0 && static_cast<size_t>(p.partition) < parts.size())
          parts[static_cast<size_t>(p.partition)] = {p.leader, p.replicas};
      }
      routes_.SetTopic(topic, std::move(parts));
    }
    return Status::Ok();
  }

  Status Assign(const std::vector<TopicPartition>& partitions) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    std::set<std::string> topics;
    for (const auto& tp : partitions) topics.insert(tp.topic);
    RDMQ_RETURN_IF_ERROR(Refresh(topics));
    std::map<int32_t, std::vector<TopicPartition>> by_broker;
    std::map<TopicPartition, int32_t> owner;
    for (const auto& tp : partitions) {
      RDMQ_ASSIGN_OR_RETURN(const int32_t broker, routes_.BrokerOf(tp.topic, tp.partition));
      by_broker[broker].push_back(tp);
      owner[tp] = broker;
    }
    for (const auto& [broker, tps] : by_broker) RDMQ_RETURN_IF_ERROR(Connect(broker));
    // Every broker's consumer gets its share (none for the brokers that lead nothing assigned).
    std::vector<Consumer*> active;
    for (auto& [broker, sub] : Subs()) {
      auto it = by_broker.find(broker);
      RDMQ_RETURN_IF_ERROR(sub->Assign(it == by_broker.end() ? std::vector<TopicPartition>{} : it->second));
      if (it != by_broker.end()) active.push_back(sub);
    }
    active_ = std::move(active);
    rr_ = 0;
    owner_ = std::move(owner);
    assignment_ = partitions;
    return Status::Ok();
  }
  std::vector<TopicPartition> Assignment() const override { return assignment_; }

  Result<std::vector<ConsumerRecord>> Poll(std::chrono::milliseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    const std::vector<Consumer*>& active = active_;
    std::vector<ConsumerRecord> out;
    const auto deadline = Clock::now() + timeout;
    if (active.empty()) {
      std::unique_lock lock(wake_mu_);
      wake_cv_.wait_until(lock, deadline, [&] { return wakeup_; });
      wakeup_ = false;
      return out;
    }
    const size_t n = active.size();
    while (true) {
      // Each consumer once, without waiting: their records' views last until their next Poll.
      for (size_t i = 0; i < n; ++i) {
        RDMQ_ASSIGN_OR_RETURN(auto got, active[(rr_ + i) % n]->Poll(std::chrono::milliseconds(0)));
        std::move(got.begin(), got.end(), std::back_inserter(out));
      }
      rr_ = (rr_ + 1) % n;
      if (!out.empty() || TakeWakeup()) return out;
      const auto now = Clock::now();
      if (now >= deadline) return out;
      // Nothing anywhere: wait in one of them (it returns as soon as its records come).
      auto slice = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      if (n > 1) slice = std::min<std::chrono::milliseconds>(slice, kWaitSlice);
      RDMQ_ASSIGN_OR_RETURN(auto got, active[rr_]->Poll(slice));
      if (!got.empty() || TakeWakeup()) return got;
    }
  }

  Status Seek(const TopicPartition& tp, int64_t offset) override {
    RDMQ_ASSIGN_OR_RETURN(Consumer * sub, Owner(tp));
    return sub->Seek(tp, offset);
  }
  Status SeekToBeginning(const std::vector<TopicPartition>& partitions) override {
    return Each(partitions,
                [](Consumer& c, const std::vector<TopicPartition>& tps) { return c.SeekToBeginning(tps); });
  }
  Status SeekToEnd(const std::vector<TopicPartition>& partitions) override {
    return Each(partitions,
                [](Consumer& c, const std::vector<TopicPartition>& tps) { return c.SeekToEnd(tps); });
  }
  Result<int64_t> Position(const TopicPartition& tp) override {
    RDMQ_ASSIGN_OR_RETURN(Consumer * sub, Owner(tp));
    return sub->Position(tp);
  }
  Result<int64_t> OffsetForTime(const TopicPartition& tp, int64_t timestamp_ms) override {
    RDMQ_ASSIGN_OR_RETURN(Consumer * sub, Owner(tp));
    return sub->OffsetForTime(tp, timestamp_ms);
  }

  void Wakeup() override {
    {
      std::lock_guard lock(wake_mu_);
      wakeup_ = true;
      for (auto& [broker, sub] : subs_) sub->Wakeup();
    }
    wake_cv_.notify_all();
  }
  void Close() override {
    if (closed_.exchange(true)) return;
    for (auto& [broker, sub] : Subs()) sub->Close();
  }

 private:
  Status CheckOpen() const {
    return closed_.load() ? Status(Errc::kFailedPrecondition, "the consumer is closed") : Status::Ok();
  }
  bool TakeWakeup() {
    std::lock_guard lock(wake_mu_);
    return std::exchange(wakeup_, false);
  }
  std::vector<std::pair<int32_t, Consumer*>> Subs() {
    std::lock_guard lock(wake_mu_);
    std::vector<std::pair<int32_t, Consumer*>> out;
    for (auto& [broker, sub] : subs_) out.emplace_back(broker, sub.get());
    return out;
  }
  // The consumer of `broker`, connected on first use.
  Status Connect(int32_t broker) {
    {
      std::lock_guard lock(wake_mu_);
      if (subs_.count(broker) != 0) return Status::Ok();
    }
    RDMQ_ASSIGN_OR_RETURN(std::string address, routes_.AddressOf(broker));
    ConsumerConfig cfg = cfg_;
    cfg.client.bootstrap = address;
    auto sub = MakeOneBrokerConsumer(cfg);
    if (!sub.ok()) return sub.status().WithContext("connecting to broker " + std::to_string(broker));
    RDMQ_LOG(kInfo, "consumer", "connected to another broker of the cluster")
        .kv("broker", broker)
        .kv("address", address);
    std::lock_guard lock(wake_mu_);
    subs_[broker] = std::move(*sub);
    return Status::Ok();
  }
  Result<Consumer*> Owner(const TopicPartition& tp) {
    auto it = owner_.find(tp);
    if (it == owner_.end()) {
      return Status(Errc::kFailedPrecondition,
                    tp.topic + "-" + std::to_string(tp.partition) + " is not assigned to this consumer");
    }
    std::lock_guard lock(wake_mu_);
    return subs_.at(it->second).get();
  }
  // Applies `fn` to each broker's consumer with its share of `partitions` (all: every consumer
  // with an empty list, which means all of its own).
  template <class Fn>
  Status Each(const std::vector<TopicPartition>& partitions, Fn fn) {
    if (partitions.empty()) {
      for (Consumer* sub : active_) RDMQ_RETURN_IF_ERROR(fn(*sub, {}));
      return Status::Ok();
    }
    std::map<Consumer*, std::vector<TopicPartition>> share;
    for (const auto& tp : partitions) {
      RDMQ_ASSIGN_OR_RETURN(Consumer * sub, Owner(tp));
      share[sub].push_back(tp);
    }
    for (auto& [sub, tps] : share) RDMQ_RETURN_IF_ERROR(fn(*sub, tps));
    return Status::Ok();
  }

  const ConsumerConfig cfg_;
  std::unique_ptr<client::AdminClient> admin_;
  client::Routes routes_;
  std::atomic<bool> closed_{false};
  std::mutex wake_mu_;  // subs_ (the map; Wakeup reaches it from another thread) and wakeup_
  std::condition_variable wake_cv_;
  bool wakeup_ = false;
  std::map<int32_t, std::unique_ptr<Consumer>> subs_;  // by broker id
  std::map<TopicPartition, int32_t> owner_;            // assigned partition -> broker
  std::vector<Consumer*> active_;                      // the consumers given partitions
  std::vector<TopicPartition> assignment_;
  size_t rr_ = 0;  // the consumer that waits next
};

}  // namespace

Result<std::unique_ptr<Consumer>> MakeClusterConsumer(const ConsumerConfig& config,
                                                      std::unique_ptr<Consumer> first,
                                                      const protocol::DescribeClusterResponse& cluster) {
  RDMQ_ASSIGN_OR_RETURN(auto admin, client::AdminClient::Connect(config.client));
  return std::unique_ptr<Consumer>(
      std::make_unique<ClusterConsumer>(config, std::move(first), cluster.this_broker, std::move(admin)));
}

}  // namespace rdmq::consumer::internal
