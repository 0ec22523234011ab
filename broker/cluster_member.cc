#include "cluster_member.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

using protocol::WireError;

namespace {

constexpr int64_t kProducerIdBlock = 1000;
// A replica's log set aside while it starts over (RestartReplica): "<topic>-<index>.discarded".
constexpr std::string_view kDiscardedSuffix = ".discarded";

// The agent's errors as the RPC protocol's.
Status ToWire(const Status& s, const std::string& topic) {
  if (s.ok()) return s;
  if (s.is(cluster::ClusterErrc::kNotEnoughBrokers))
    return Status(WireError::kNotEnoughReplicas, s.ToString());
  if (s.is(Errc::kAlreadyExists))
    return Status(WireError::kTopicExists, "topic '" + topic + "' already exists");
  if (s.is(Errc::kNotFound)) return Status(WireError::kUnknownTopic, "unknown topic '" + topic + "'");
  if (s.is(Errc::kInvalidArgument)) return Status(WireError::kInvalidConfig, std::string(s.context()));
  if (s.is(Errc::kUnavailable) || s.is(Errc::kTimeout)) return Status(WireError::kUnavailable, s.ToString());
  return Status(WireError::kInternal, s.ToString());
}

// FNV-1a: the same on every broker, whatever its build.
uint64_t StableHash(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

metadata::TopicInfo InfoOf(const std::string& name, uint64_t id, int64_t created_ms,
                           const metadata::TopicConfig& c) {
  return metadata::TopicInfo{name, TopicId(id), c, created_ms};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ConfigToEntries(const metadata::TopicConfig& c) {
  return metadata::ConfigEntries(c);
}

Result<metadata::TopicConfig> ConfigFromEntries(
    const std::vector<std::pair<std::string, std::string>>& entries) {
  metadata::TopicConfig c;
  for (const auto& [k, v] : entries) RDMQ_RETURN_IF_ERROR(metadata::SetConfig(&c, k, v));
  RDMQ_RETURN_IF_ERROR(metadata::ValidateConfig(c));
  return c;
}

Status ClusterMember::Start(const cluster::BrokerInfo& self) {
  cluster::AgentOptions o;
  o.zookeeper = cfg_.cluster_zookeeper;
  o.root = cfg_.cluster_root;
  o.session_timeout = std::chrono::milliseconds(cfg_.cluster_session_timeout_ms);
  o.self = self;
  ReplicationContext& rc = replication_ctx_;
  rc.self = id();
  rc.client.sasl_username = cfg_.replica_sasl_username;
  rc.client.sasl_password = cfg_.replica_sasl_password;
  rc.fetch_max_bytes = cfg_.replica_fetch_max_bytes;
  rc.lag_time_max_ns = uint64_t{cfg_.replica_lag_time_max_ms} * 1'000'000;
  rc.publisher = &publisher_;
  rc.address_of = [this](int32_t broker) {
    const cluster::ClusterSnapshot view = View();
    auto it = view.brokers.find(broker);
    return it == view.brokers.end() ? std::string() : it->second.control;
  };
  rc.change_isr = [this](const cluster::TopicPartition& tp, const cluster::PartitionState& from,
                         std::vector<cluster::BrokerId> isr) -> Result<cluster::PartitionState> {
    const auto agent = Agent();
    if (!agent) return Status(Errc::kUnavailable, "not in the cluster (yet, or any more)");
    return agent->ChangeIsr(tp, from, std::move(isr));
  };
  auto a = cluster::ClusterAgent::Start(o, this);
  if (!a.ok()) return a.status().WithContext("cluster.zookeeper.connect=" + cfg_.cluster_zookeeper);
  {
    MutexLock lock(agent_mu_);
    agent_ = std::move(*a);
  }
  // The replicas this broker holds, open before it says it is serving.
  UniqueLock lock(sync_mu_);
  const auto deadline = std::chrono::steady_clock::now() + o.session_timeout * 2;
  while (!synced_) {
    if (!synced_cv_.WaitUntil(lock, deadline) && !synced_) {
      return Status(Errc::kTimeout, "the cluster's state could not be read from ZooKeeper at " + o.zookeeper);
    }
  }
  return Status::Ok();
}

void ClusterMember::Stop() {
  std::shared_ptr<cluster::ClusterAgent> a;
  {
    MutexLock lock(agent_mu_);
    a = std::move(agent_);
  }
  a.reset();  // joins the agent's thread (which may be in OnReplicas), then closes the session
  MutexLock lock(sync_mu_);
  replicating_.clear();  // stops the feeds
}

Result<metadata::TopicInfo> ClusterMember::CreateTopic(const std::string& name,
                                                       const metadata::TopicConfig& config) {
  const auto agent = Agent();
  if (!agent) return Status(WireError::kUnavailable, "not in the cluster (yet, or any more)");
  auto t = agent->CreateTopic(name, ConfigToEntries(config), config.partitions, config.replication_factor);
  if (!t.ok()) return ToWire(t.status(), name);
  if (Status s = agent->WaitForLeaders(name, std::chrono::seconds(10)); !s.ok()) {
    RDMQ_LOG(kWarn, "broker", "a new topic's partitions have no leader yet").kv("topic", name).kv("error", s);
  }
  return InfoOf(name, t->id, t->created_ms, config);
}

Status ClusterMember::DeleteTopic(const std::string& name) {
  const auto agent = Agent();
  if (!agent) return Status(WireError::kUnavailable, "not in the cluster (yet, or any more)");
  return ToWire(agent->DeleteTopic(name), name);
}

Result<metadata::TopicInfo> ClusterMember::AlterTopic(const std::string& name,
                                                      const metadata::TopicConfig& config) {
  auto now = GetTopic(name);
  if (!now) return Status(WireError::kUnknownTopic, "unknown topic '" + name + "'");
  const int32_t have = static_cast<int32_t>(now->replicas.size());
  if (config.partitions < have) {
    return Status(WireError::kInvalidConfig, "partitions=" + std::to_string(config.partitions) +
                                                 ": partitions can grow, not shrink (now " +
                                                 std::to_string(have) + ")");
  }
  if (config.replication_factor != now->info.config.replication_factor) {
    return Status(WireError::kInvalidConfig, "replication.factor is set at creation (" +
                                                 std::to_string(now->info.config.replication_factor) + ")");
  }
  const auto agent = Agent();
  if (!agent) return Status(WireError::kUnavailable, "not in the cluster (yet, or any more)");
  if (config.partitions > have) {
    if (Status s = agent->AddPartitions(name, config.partitions).status(); !s.ok()) return ToWire(s, name);
  }
  auto t = agent->AlterTopic(name, ConfigToEntries(config));
  if (!t.ok()) return ToWire(t.status(), name);
  (void)agent->WaitForLeaders(name, std::chrono::seconds(10));
  return InfoOf(name, t->id, t->created_ms, config);
}

Status ClusterMember::ReassignPartition(const std::string& name, int32_t partition,
                                        const std::vector<int32_t>& replicas) {
  const auto agent = Agent();
  if (!agent) return Status(WireError::kUnavailable, "not in the cluster (yet, or any more)");
  const Status s = agent->ReassignPartition(name, partition, replicas).status();
  if (s.is(Errc::kFailedPrecondition))
    return Status(WireError::kReassignmentInProgress, std::string(s.context()));
  if (s.is(Errc::kInvalidArgument)) return Status(WireError::kInvalidRequest, std::string(s.context()));
  return ToWire(s, name);
}

namespace {
std::vector<metadata::TopicInfo> TopicsOf(const cluster::ClusterSnapshot& s) {
  std::vector<metadata::TopicInfo> out;
  for (const auto& [name, t] : s.topics) {
    auto c = ConfigFromEntries(t.config);
    if (!c.ok()) continue;
    c->partitions = static_cast<int32_t>(t.replicas.size());
    out.push_back(InfoOf(name, t.id, t.created_ms, *c));
  }
  return out;
}
}  // namespace

std::vector<metadata::TopicInfo> ClusterMember::ListTopics() const {
  const auto agent = Agent();
  if (!agent) return {};
  auto snap = agent->Snapshot();
  return TopicsOf(snap.ok() ? *snap : agent->Cached());
}

std::vector<metadata::TopicInfo> ClusterMember::CachedTopics() const { return TopicsOf(View()); }

std::optional<ClusterTopic> ClusterMember::GetTopic(const std::string& name) const {
  const auto agent = Agent();
  if (!agent) return std::nullopt;
  auto snap = agent->Snapshot();
  return TopicIn(snap.ok() ? *snap : agent->Cached(), name);
}

std::optional<ClusterTopic> ClusterMember::TopicIn(const cluster::ClusterSnapshot& s,
                                                   const std::string& name) {
  auto it = s.topics.find(name);
  if (it == s.topics.end()) return std::nullopt;
  auto c = ConfigFromEntries(it->second.config);
  if (!c.ok()) return std::nullopt;
  c->partitions = static_cast<int32_t>(it->second.replicas.size());
  ClusterTopic out;
  out.info = InfoOf(name, it->second.id, it->second.created_ms, *c);
  out.replicas = it->second.replicas;
  for (int32_t p = 0; p < static_cast<int32_t>(out.replicas.size()); ++p) {
    auto st = s.states.find({name, p});
    out.states.push_back(st != s.states.end() ? st->second : cluster::PartitionState{});
  }
  return out;
}

protocol::DescribeClusterResponse ClusterMember::Describe() const {
  const cluster::ClusterSnapshot s = View();
  protocol::DescribeClusterResponse r;
  r.clustered = 1;
  r.controller = s.controller;
  r.controller_epoch = s.controller_epoch;
  r.this_broker = id();
  r.zookeeper = cfg_.cluster_zookeeper;
  for (const auto& [bid, b] : s.brokers) r.brokers.push_back({bid, b.control, b.data, b.kafka});
  return r;
}

Result<ProducerId> ClusterMember::NextProducerId() {
  MutexLock lock(ids_mu_);
  if (next_id_ >= id_limit_) {
    const auto agent = Agent();
    if (!agent) return Status(WireError::kUnavailable, "not in the cluster (yet, or any more)");
    auto first = agent->ProducerIdBlock(kProducerIdBlock);
    if (!first.ok())
      return Status(WireError::kUnavailable, "a block of producer ids: " + first.status().ToString());
    next_id_ = *first;
    id_limit_ = *first + kProducerIdBlock;
  }
  return ProducerId(next_id_++);
}

int32_t ClusterMember::CoordinatorOf(const std::string& group) const {
  std::vector<int32_t> candidates;
  std::vector<int32_t> all;
  for (const auto& [bid, b] : View().brokers) {
    if (!b.kafka.empty()) candidates.push_back(bid);
    all.push_back(bid);
  }
  // Kafka clients must reach their coordinator's Kafka listener; without one anywhere, rdmq's
  // own groups still need a coordinator.
  if (candidates.empty()) candidates = std::move(all);
  if (candidates.empty()) return -1;
  return candidates[StableHash(group) % candidates.size()];
}

void ClusterMember::SetServing(Partition& p, bool serving, int32_t leader, int32_t epoch) {
  const bool was = p.serving();
  const int32_t was_epoch = p.leader_epoch();
  // The leader stamps its epoch on every batch it takes (storage-format.md, "Leader epochs"),
  // from before it serves; a follower keeps the stamps its leader's batches carry, from after it
  // stopped serving.
  if (!serving) p.SetLeadership(false, leader, epoch);
  {
    MutexLock plock(p.mu);
    if (!p.deleted()) {
      if (Status s = p.log().SetLeaderEpoch(serving ? epoch : -1); !s.ok()) {
        RDMQ_LOG(kError, "broker", "the partition's log refuses the leader epoch; not serving it")
            .kv("partition", p.where())
            .kv("leader_epoch", epoch)
            .kv("error", s);
        serving = false;
      }
    }
  }
  p.SetLeadership(serving, leader, epoch);
  // A follower's replica lease is its leader's of one epoch: a newer epoch (this broker's own
  // included) fences it.
  if (!was && epoch > was_epoch) topics_.EndLeases(p, WireError::kFencedLeaderEpoch);
  if (was == serving) return;
  RDMQ_LOG(kInfo, "broker", serving ? "leading a partition" : "no longer leading a partition")
      .kv("partition", p.where())
      .kv("leader", leader)
      .kv("leader_epoch", epoch);
  if (!serving) topics_.EndLeases(p, WireError::kNotLeader);
}

void ClusterMember::OnReplicas(const cluster::ReplicaMap& replicas) {
  MutexLock lock(sync_mu_);
  StopReplicating(replicas);
  DropUnheld(replicas);
  OpenHeld(replicas);
  groups_.TopicsChanged();
  if (!synced_) {
    synced_ = true;
    synced_cv_.NotifyAll();
  }
}

void ClusterMember::DropUnheld(const cluster::ReplicaMap& replicas) {
  std::set<std::string> held;
  for (const auto& [tp, r] : replicas) held.insert(tp.topic);
  const cluster::ClusterSnapshot view = View();
  for (const std::string& name : topics_.TopicNames()) {
    std::optional<Topic> t = topics_.Get(name);
    if (!t) continue;
    for (int32_t i = 0; i < static_cast<int32_t>(t->partitions.size()); ++i) {
      if (!t->partitions[static_cast<size_t>(i)]) continue;
      auto r = replicas.find({name, i});
      if (r != replicas.end() && r->second.topic_id == t->info.id.value()) continue;
      if (std::shared_ptr<Partition> p = topics_.Take(name, PartitionId(i))) {
        RDMQ_LOG(kInfo, "broker", "replica no longer held here; closed and removed")
            .kv("partition", p->where());
        // Its producers are told where it went: NOT_LEADER while the cluster has the topic (the
        // replica moved away), else the topic is gone.
        const bool moved = view.topics.count(name) != 0;
        topics_.Close(*p, true, moved ? WireError::kNotLeader : WireError::kUnknownTopic);
      }
    }
  }
  // Logs a replica that started over set aside (RestartReplica), left by a crash.
  std::error_code listed;
  for (const auto& e : std::filesystem::directory_iterator(cfg_.data_dir + "/topics", listed)) {
    const std::string name = e.path().filename().string();
    if (name.size() > kDiscardedSuffix.size() &&
        name.compare(name.size() - kDiscardedSuffix.size(), kDiscardedSuffix.size(), kDiscardedSuffix) == 0) {
      std::error_code ec;
      std::filesystem::remove_all(e.path(), ec);
    }
  }
  // Mirrored topics this broker holds nothing of any more (deleted, or moved while it was down).
  for (const auto& t : meta_.ListTopics()) {
    if (held.count(t.name) != 0) continue;
    if (topics_.Get(t.name)) continue;
    for (int32_t i = 0; i < t.config.partitions; ++i) {
      std::error_code ec;
      std::filesystem::remove_all(cfg_.data_dir + "/topics/" + t.name + "-" + std::to_string(i), ec);
    }
    (void)meta_.DeleteTopic(t.name);
    RDMQ_LOG(kInfo, "broker", "topic no longer held here; forgotten").kv("topic", t.name);
  }
}

void ClusterMember::OpenHeld(const cluster::ReplicaMap& replicas) {
  // First what each held replica is, and which of them are not open yet; then those are opened
  // side by side (a start with many replicas waits on their fsyncs and reads, as a single
  // broker's does); then each is placed and served in the order of the map.
  struct Held {
    const cluster::TopicPartition* tp;
    const cluster::Replica* r;
    metadata::TopicInfo info;
    std::shared_ptr<Partition> p;  // null until opened
    bool was_open = false;         // open before this call (its config may have changed)
  };
  std::vector<Held> held;
  held.reserve(replicas.size());
  for (const auto& [tp, r] : replicas) {
    auto config = ConfigFromEntries(r.config);
    if (!config.ok()) {
      RDMQ_LOG(kError, "broker", "a topic's config in ZooKeeper is not valid; its replica stays closed")
          .kv("topic", tp.topic)
          .kv("error", config.status());
      continue;
    }
    config->partitions = r.partition_count;
    metadata::TopicInfo info = InfoOf(tp.topic, r.topic_id, r.created_ms, *config);
    auto mirrored = meta_.GetTopic(tp.topic);
    if (!mirrored.ok() || !(*mirrored == info)) {
      if (Status s = meta_.PutTopic(info); !s.ok()) {
        RDMQ_LOG(kError, "broker", "mirroring a topic in the metadata store failed")
            .kv("topic", tp.topic)
            .kv("error", s);
        continue;
      }
    }
    std::shared_ptr<Partition> p = topics_.FindReplica(tp.topic, PartitionId(tp.partition));
    const bool was_open = p != nullptr;
    held.push_back({&tp, &r, std::move(info), std::move(p), was_open});
  }
  std::vector<TopicTable::PartitionRef> to_open;
  std::vector<size_t> opening;  // the entry of `held` each of to_open is for
  for (size_t i = 0; i < held.size(); ++i) {
    if (held[i].p) continue;
    to_open.push_back({&held[i].info, held[i].tp->partition});
    opening.push_back(i);
  }
  std::vector<Result<std::shared_ptr<Partition>>> opened = topics_.OpenEach(to_open);
  for (size_t k = 0; k < opened.size(); ++k) {
    Held& h = held[opening[k]];
    if (!opened[k].ok()) {
      RDMQ_LOG(kError, "broker", "opening a replica failed")
          .kv("topic", h.tp->topic)
          .kv("partition", h.tp->partition)
          .kv("error", opened[k].status());
      continue;
    }
    h.p = std::move(*opened[k]);
    h.p->SetLeadership(false, h.r->state.leader, h.r->state.leader_epoch);
  }
  for (Held& h : held) {
    if (!h.p) continue;  // failed to open (logged above)
    if (h.was_open) {
      MutexLock plock(h.p->mu);
      if (!h.p->deleted() && !(h.p->config() == h.info.config)) (void)h.p->Reconfigure(h.info.config);
    }
    const bool serving = h.r->state.leader == id() && h.r->state.leader >= 0;
    topics_.Place(h.info, PartitionId(h.tp->partition), h.p);
    SetServing(*h.p, serving, h.r->state.leader, h.r->state.leader_epoch);
    Replicate(*h.tp, *h.r, h.p);
  }
}

Status ClusterMember::RestartReplica(const std::string& topic, PartitionId index, Offset start) {
  MutexLock lock(sync_mu_);  // no OnReplicas opens or closes replicas meanwhile
  std::shared_ptr<Partition> p = topics_.FindReplica(topic, index);
  const std::string where = topic + "-" + std::to_string(index.value());
  if (!p) return Status(WireError::kNotLeader, "this broker holds no replica of " + where);
  int32_t leader = -1, epoch = 0;
  Offset was{0};
  {
    MutexLock plock(p->mu);
    if (p->deleted()) return Status(WireError::kNotLeader, "this broker holds no replica of " + where);
    if (p->serving()) return Status(WireError::kInvalidRequest, "this broker leads " + where);
    was = p->active().log_end;
    if (start <= was) {
      return Status(WireError::kInvalidRequest, where + " ends at " + std::to_string(was.value()) +
                                                    ", not below " + std::to_string(start.value()));
    }
    leader = p->leader();
    epoch = p->leader_epoch();
  }
  auto info = meta_.GetTopic(topic);
  if (!info.ok()) return Status(WireError::kNotLeader, "this broker holds no replica of " + where);
  // The old log goes aside whole (one rename: a crash leaves it or the new one, never a mix) and
  // is deleted once the new one is open; a leftover is deleted at the next start (DropUnheld).
  (void)topics_.Take(topic, index);
  topics_.Close(*p, false);
  const std::string dir = p->dir();
  const std::string aside = dir + std::string(kDiscardedSuffix);
  std::error_code ec;
  std::filesystem::remove_all(aside, ec);
  std::filesystem::rename(dir, aside, ec);
  if (ec) {
    RDMQ_LOG(kError, "broker", "could not set a replica's log aside; reopening it as it was")
        .kv("partition", where)
        .kv("error", ec.message());
    start = Offset(0);  // reopened as it was (the directory still holds it)
  }
  auto opened = topics_.OpenPartition(*info, index, start);
  if (!opened.ok()) {
    RDMQ_LOG(kError, "broker", "reopening a replica failed")
        .kv("partition", where)
        .kv("error", opened.status());
    return Status(WireError::kStorageError, opened.status().ToString());
  }
  (*opened)->SetLeadership(false, leader, epoch);
  topics_.Place(*info, index, *opened);
  if (ec) return Status(WireError::kStorageError, "setting the log of " + where + " aside: " + ec.message());
  std::filesystem::remove_all(aside, ec);
  RDMQ_LOG(kInfo, "broker", "replica started over at its leader's log start")
      .kv("partition", where)
      .kv("was_log_end", was)
      .kv("log_start", start);
  return Status::Ok();
}

void ClusterMember::StopReplicating(const cluster::ReplicaMap& replicas) {
  for (auto it = replicating_.begin(); it != replicating_.end();) {
    auto r = replicas.find(it->first);
    // Still leading (at a newer epoch too: Replicate then replaces it, keeping the partition's
    // acks=all waiters).
    const bool keep = r != replicas.end() && r->second.state.leader == id();
    it = keep ? std::next(it) : replicating_.erase(it);
  }
}

void ClusterMember::Replicate(const cluster::TopicPartition& tp, const cluster::Replica& r,
                              const std::shared_ptr<Partition>& p) {
  const bool lead = p->serving() && p->replicated() && r.replicas.size() > 1;
  auto it = replicating_.find(tp);
  if (it != replicating_.end() && (!lead || &it->second->partition() != p.get())) {
    replicating_.erase(it);
    it = replicating_.end();
  }
  if (!lead) return;
  if (it == replicating_.end()) {
    replicating_.emplace(tp, std::make_unique<PartitionReplication>(p, tp, r, replication_ctx_));
  } else if (it->second->epoch() != r.state.leader_epoch || it->second->replicas() != r.replicas) {
    // A new epoch, or followers added or taken away (a reassignment): a new replica set and
    // feeds, made before the old ones go so that what waits for acks=all keeps waiting.
    it->second = std::make_unique<PartitionReplication>(p, tp, r, replication_ctx_);
  } else {
    it->second->Update(r.state);
  }
}

void ClusterMember::OnSessionLost() {
  MutexLock lock(sync_mu_);
  replicating_.clear();
  // Whatever this broker led, another may lead now: nothing more is served until the new
  // session's view says so.
  for (const auto& p : topics_.AllPartitions()) SetServing(*p, false, -1, p->leader_epoch());
}

}  // namespace rdmq::broker::internal
