#include "replication.h"

#include <optional>
#include <utility>

#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "replica_feed.h"

namespace rdmq::broker::internal {

namespace {

constexpr uint64_t kIsrCheckNs = 200'000'000;

std::string Brokers(const std::vector<cluster::BrokerId>& ids) {
  std::string out;
  for (cluster::BrokerId b : ids) out += (out.empty() ? "" : ",") + std::to_string(b);
  return out;
}

}  // namespace

PartitionReplication::PartitionReplication(std::shared_ptr<Partition> p, cluster::TopicPartition tp,
                                           const cluster::Replica& replica, const ReplicationContext& ctx)
    : p_(std::move(p)),
      tp_(std::move(tp)),
      epoch_(replica.state.leader_epoch),
      replicas_(replica.replicas),
      ctx_(ctx) {
  {
    MutexLock lock(mu_);
    state_ = replica.state;
  }
  {
    MutexLock lock(p_->mu);
    if (!p_->deleted()) {
      cluster::ReplicaSetOptions o;
      o.leader = ctx_.self;
      o.replicas = replica.replicas;
      o.isr = replica.state.isr;
      o.min_insync_replicas = p_->config().min_insync_replicas;
      o.lag_time_max_ns = ctx_.lag_time_max_ns;
      o.high_watermark = p_->active().high_watermark;
      o.log_end = p_->active().log_end;
      o.now_ns = MonoNanos();
      auto set = std::make_unique<cluster::ReplicaSet>(o);
      set_ = set.get();
      p_->SetReplicaSet(std::move(set));
      ctx_.publisher->Publish(*p_);  // with the leader alone in the ISR, everything is readable
    }
  }
  for (cluster::BrokerId b : replica.replicas) {
    if (b != ctx_.self) feeds_.push_back(std::make_unique<ReplicaFeed>(p_, epoch_, b, ctx_, *this));
  }
  RDMQ_LOG(kInfo, "broker", "replicating a partition")
      .kv("partition", p_->where())
      .kv("leader_epoch", epoch_)
      .kv("replicas", Brokers(replica.replicas))
      .kv("isr", Brokers(replica.state.isr));
}

PartitionReplication::~PartitionReplication() {
  for (auto& f : feeds_) f->Stop();  // all at once: each ends within a request timeout
  feeds_.clear();
  MutexLock lock(p_->mu);
  if (!p_->deleted() && p_->replica_set() == set_) p_->SetReplicaSet(nullptr);
}

void PartitionReplication::Update(const cluster::PartitionState& state) {
  {
    MutexLock lock(mu_);
    if (state.leader_epoch != epoch_ || state.version <= state_.version) return;
    state_ = state;
  }
  MutexLock lock(p_->mu);
  cluster::ReplicaSet* set = p_->replica_set();
  if (set == nullptr || p_->deleted()) return;
  set->SetIsr(state.isr);
  ctx_.publisher->Publish(*p_);  // a follower that left no longer holds the high watermark back
}

void PartitionReplication::CheckIsr() {
  const uint64_t now = MonoNanos();
  cluster::PartitionState from;
  {
    MutexLock lock(mu_);
    if (checking_ || now < next_check_ns_) return;
    checking_ = true;
    next_check_ns_ = now + kIsrCheckNs;
    from = state_;
  }
  std::optional<std::vector<cluster::BrokerId>> proposed;
  {
    MutexLock lock(p_->mu);
    cluster::ReplicaSet* set = p_->replica_set();
    if (set != nullptr && !p_->deleted()) proposed = set->ProposedIsr(now);
  }
  std::optional<cluster::PartitionState> written;
  if (proposed) {
    auto r = ctx_.change_isr(tp_, from, *proposed);
    if (r.ok()) {
      written = *r;
    } else {
      RDMQ_LOG(kWarn, "broker", "changing the ISR failed; trying again")
          .kv("partition", p_->where())
          .kv("isr", Brokers(*proposed))
          .kv("error", r.status());
    }
  }
  {
    MutexLock lock(mu_);
    checking_ = false;
  }
  if (written) Update(*written);
}

}  // namespace rdmq::broker::internal
