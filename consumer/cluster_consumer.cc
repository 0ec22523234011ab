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
// How often Poll asks where the assigned partitions are led (a leader that died or was deposed,
// a reassignment).
constexpr auto kFollowInterval = std::chrono::seconds(1);

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
    brokers_.clear();
    for (const auto& b : cluster.brokers) {
      live.push_back({b.id, b.control});
      brokers_.push_back(b.id);
    }
    routes_.SetBrokers(std::move(live));
    for (const std::string& topic : topics) {
      RDMQ_ASSIGN_OR_RETURN(auto d, admin_->DescribeTopic(topic));
      std::vector<client::PartitionRoute> parts(d.partitions.size());
      for (const auto& p : d.partitions) {
        if (p.partition >= 0 && static_cast<size_t>(p.partition) < parts.size())
          parts[static_cast<size_t>(p.partition)] = {p.leader, p.replicas};
        leaders_[{topic, p.partition}] = p.leader;
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
    RDMQ_RETURN_IF_ERROR(Distribute(by_broker));
    owner_ = std::move(owner);
    assignment_ = partitions;
    next_follow_ = Clock::now() + kFollowInterval;
    return Status::Ok();
  }
  std::vector<TopicPartition> Assignment() const override { return assignment_; }

  Result<std::vector<ConsumerRecord>> Poll(std::chrono::milliseconds timeout) override {
    RDMQ_RETURN_IF_ERROR(CheckOpen());
    if (!assignment_.empty() && Clock::now() >= next_follow_) {
      next_follow_ = Clock::now() + kFollowInterval;
      Follow();
    }
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
  // Every broker's consumer gets its share (none for the brokers that lead nothing assigned);
  // the partitions a consumer keeps keep their positions.
  Status Distribute(const std::map<int32_t, std::vector<TopicPartition>>& by_broker) {
    std::vector<Consumer*> active;
    for (auto& [broker, sub] : Subs()) {
      auto it = by_broker.find(broker);
      RDMQ_RETURN_IF_ERROR(sub->Assign(it == by_broker.end() ? std::vector<TopicPartition>{} : it->second));
      if (it != by_broker.end()) active.push_back(sub);
    }
    active_ = std::move(active);
    rr_ = 0;
    return Status::Ok();
  }

  // Moves each assigned partition whose leader is now another broker to that broker's consumer,
  // at the position the old one reached (where the old one never read: auto.offset.reset). A
  // failure leaves the partitions where they were, to be tried again at the next interval.
  void Follow() {
    std::set<std::string> topics;
    for (const auto& tp : assignment_) topics.insert(tp.topic);
    if (Status s = Refresh(topics); !s.ok()) {
      if (Status again = Readmin(); !again.ok() || !(s = Refresh(topics)).ok()) {
        RDMQ_LOG(kDebug, "consumer", "asking where partitions are led failed").kv("error", s);
        return;
      }
    }
    std::map<TopicPartition, int32_t> owner = owner_;
    std::map<TopicPartition, int64_t> positions;
    for (auto& [tp, broker] : owner) {
      auto leader = leaders_.find(tp);
      if (leader == leaders_.end() || leader->second < 0 || leader->second == broker) continue;
      if (Status s = Connect(leader->second); !s.ok()) {
        RDMQ_LOG(kDebug, "consumer", "the new leader cannot be reached yet")
            .kv("broker", leader->second)
            .kv("error", s);
        continue;
      }
      if (auto at = Position(tp); at.ok()) positions[tp] = *at;
      RDMQ_LOG(kInfo, "consumer", "following a partition to its new leader")
          .kv("partition", tp.topic + "-" + std::to_string(tp.partition))
          .kv("from", broker)
          .kv("to", leader->second)
          .kv("position", positions.count(tp) != 0 ? positions[tp] : -1);
      broker = leader->second;
    }
    if (owner == owner_) return;
    std::map<int32_t, std::vector<TopicPartition>> by_broker;
    for (const auto& [tp, broker] : owner) by_broker[broker].push_back(tp);
    if (Status s = Distribute(by_broker); !s.ok()) {
      RDMQ_LOG(kWarn, "consumer", "moving partitions to their new leaders failed; retrying").kv("error", s);
      return;
    }
    owner_ = std::move(owner);
    for (const auto& [tp, at] : positions) (void)Seek(tp, at);
  }

  // A new admin connection, to any live broker the routes know (the bootstrap may be the one
  // that died).
  Status Readmin() {
    Status last(Errc::kUnavailable, "no broker of the cluster is known");
    for (int32_t broker : brokers_) {
      auto address = routes_.AddressOf(broker);
      if (!address.ok()) continue;
      client::ClientOptions o = cfg_.client;
      o.bootstrap = *address;
      auto admin = client::AdminClient::Connect(o);
      if (admin.ok()) {
        admin_ = std::move(*admin);
        return Status::Ok();
      }
      last = admin.status();
    }
    return last;
  }

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
  std::map<TopicPartition, int32_t> leaders_;          // as DescribeTopic last said (-1: none)
  std::vector<int32_t> brokers_;                       // the live ones, as DescribeCluster last said
  Clock::time_point next_follow_{};
  std::vector<Consumer*> active_;  // the consumers given partitions
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
