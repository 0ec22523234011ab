#include "admin_handlers.h"

#include "meta_errors.h"
#include "rdmq/common/log.h"
#include "rpc_handler.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

namespace {

protocol::TopicInfo ToWire(const metadata::TopicInfo& t) {
  protocol::TopicInfo w;
  w.name = t.name;
  w.id = t.id;
  w.created_ms = TimestampMs(t.created_ms);
  for (auto& [k, v] : metadata::ConfigEntries(t.config)) w.configs.push_back({k, v});
  return w;
}

Result<metadata::TopicConfig> ApplyConfigs(metadata::TopicConfig c,
                                           const std::vector<protocol::ConfigEntry>& e) {
  for (const auto& [k, v] : e) {
    if (Status s = metadata::SetConfig(&c, k, v); !s.ok()) {
      std::string msg = k;
      msg.append("=").append(v).append(": ");
      msg.append(s.context().empty() ? s.code().message() : std::string(s.context()));
      return Status(WireError::kInvalidConfig, msg);
    }
  }
  if (Status s = metadata::ValidateConfig(c); !s.ok()) {
    return Status(WireError::kInvalidConfig,
                  std::string(s.context().empty() ? s.code().message() : s.context()));
  }
  return c;
}

Status UnknownTopic(const std::string& name) {
  return Status(WireError::kUnknownTopic, "unknown topic '" + name + "'");
}

}  // namespace

Status AdminHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  using metadata::AclOperation;
  using metadata::AclResourceType;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  RDMQ_RETURN_IF_ERROR(
      Serve<protocol::HelloRequest>(server, Api::kHello, rpc::RunOn::kDispatcher, Open{},
                                    [this](Ctx c, const protocol::HelloRequest& r) { return Hello(c, r); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::CreateTopicRequest>(
      server, Api::kCreateTopic, kPool,
      [this](Ctx c, const protocol::CreateTopicRequest& r) {
        return authz_.enabled() ? authz_.CheckCreateTopic(authz_.UserOf(c.client_id), r.name) : Status::Ok();
      },
      [this](Ctx, const protocol::CreateTopicRequest& r) { return CreateTopic(r); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::TopicNameRequest>(
      server, Api::kDeleteTopic, kPool,
      authz_.OnTopic(AclOperation::kDelete, &protocol::TopicNameRequest::name),
      [this](Ctx, const protocol::TopicNameRequest& r) { return DeleteTopic(r); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::TopicNameRequest>(
      server, Api::kDescribeTopic, kPool,
      authz_.OnTopic(AclOperation::kDescribe, &protocol::TopicNameRequest::name),
      [this](Ctx, const protocol::TopicNameRequest& r) { return DescribeTopic(r); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::Empty>(  // the topics the client may describe
      server, Api::kListTopics, kPool, InHandler{},
      [this](Ctx c, const protocol::Empty&) -> Result<protocol::ListTopicsResponse> {
        RDMQ_ASSIGN_OR_RETURN(protocol::ListTopicsResponse r, ListTopics());
        if (authz_.enabled()) {
          const std::string user = authz_.UserOf(c.client_id);
          std::erase_if(r.topics, [&](const protocol::TopicInfo& t) {
            return !authz_.Allowed(user, AclOperation::kDescribe, AclResourceType::kTopic, t.name);
          });
        }
        return r;
      }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::AlterTopicRequest>(
      server, Api::kAlterTopic, kPool,
      authz_.OnTopic(AclOperation::kAlter, &protocol::AlterTopicRequest::name),
      [this](Ctx, const protocol::AlterTopicRequest& r) { return AlterTopic(r); }));
  // Moving replicas is the cluster's business (Kafka's AlterPartitionReassignments: Alter on the
  // cluster).
  RDMQ_RETURN_IF_ERROR(Serve<protocol::ReassignPartitionRequest>(
      server, Api::kReassignPartition, kPool, authz_.OnCluster(AclOperation::kAlter),
      [this](Ctx, const protocol::ReassignPartitionRequest& r) -> Result<protocol::Empty> {
        if (cluster_ == nullptr) {
          return Status(WireError::kNotSupported,
                        "moving replicas needs a cluster (cluster.zookeeper.connect)");
        }
        MutexLock admin(admin_mu_);
        Status started = cluster_->ReassignPartition(r.topic, r.partition.value(), r.replicas);
        if (!started.ok()) return started;
        return protocol::Empty{};
      }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::Empty>(
      server, Api::kDescribeCluster, kPool, authz_.OnCluster(AclOperation::kDescribe),
      [this](Ctx, const protocol::Empty&) -> Result<protocol::DescribeClusterResponse> {
        return DescribeCluster();
      }));
  return Serve<protocol::Empty>(
      server, Api::kInitProducerId, kPool,
      [this](Ctx c, const protocol::Empty&) {
        return authz_.enabled() ? authz_.CheckIdempotentWrite(authz_.UserOf(c.client_id)) : Status::Ok();
      },
      [this](Ctx, const protocol::Empty&) { return InitProducerId(); });
}

Result<protocol::HelloResponse> AdminHandlers::Hello(const rpc::RequestContext& ctx,
                                                     const protocol::HelloRequest& req) {
  if (req.protocol_version != protocol::kProtocolVersion) {
    return Status(WireError::kNotSupported, "protocol version " + std::to_string(req.protocol_version) +
                                                "; this broker speaks version " +
                                                std::to_string(protocol::kProtocolVersion));
  }
  const auto session = sessions_.Hello(ctx.client_id, req.client_name);
  if (!ctx.peer_identity.empty()) session->SetCertUser(std::string(ctx.peer_identity));
  protocol::HelloResponse r;
  r.sasl_mechanisms = cfg_.RpcSaslMechanisms();
  if (r.sasl_mechanisms.empty()) session->logged_in.store(true);
  r.data_token = session->data_token;
  r.client_id = ctx.client_id;
  r.broker_id = cfg_.broker_id;
  r.data_address = data_fabric_.address();
  r.provider = static_cast<uint8_t>(data_fabric_.provider());
  r.lease_ms = cfg_.lease_ms;
  r.max_message_bytes = cfg_.topic_defaults.max_message_bytes;
  RDMQ_LOG(kDebug, "broker", "hello")
      .kv("client", ctx.client_id)
      .kv("name", req.client_name)
      .kv("peer", ctx.peer)
      .kv("cert_cn", ctx.peer_identity);
  return r;
}

Result<protocol::TopicResponse> AdminHandlers::CreateTopic(const protocol::CreateTopicRequest& req) {
  MutexLock admin(admin_mu_);
  if (Status s = metadata::ValidateTopicName(req.name); !s.ok()) return MetadataToWire(s);
  RDMQ_ASSIGN_OR_RETURN(metadata::TopicConfig cfg, ApplyConfigs(cfg_.topic_defaults, req.configs));
  if (cluster_ != nullptr) {
    RDMQ_ASSIGN_OR_RETURN(metadata::TopicInfo made, cluster_->CreateTopic(req.name, cfg));
    groups_.TopicsChanged();
    return protocol::TopicResponse{ToWire(made)};
  }
  if (cfg.replication_factor > 1) {
    return Status(
        WireError::kNotEnoughReplicas,
        "replication.factor=" + std::to_string(cfg.replication_factor) +
            ": a broker on its own holds one replica; a cluster (cluster.zookeeper.connect) holds more");
  }
  auto info = meta_.CreateTopic(req.name, cfg);
  if (!info.ok()) return MetadataToWire(info.status());
  Topic topic;
  topic.info = *info;
  if (Status s = topics_.OpenPartitions(*info, 0, info->config.partitions, &topic.partitions); !s.ok()) {
    RDMQ_LOG(kError, "broker", "creating a topic failed; rolling back").kv("topic", req.name).kv("error", s);
    (void)meta_.DeleteTopic(req.name);
    return Status(WireError::kStorageError, s.ToString());
  }
  topics_.Insert(std::move(topic));
  groups_.TopicsChanged();
  RDMQ_LOG(kInfo, "broker", "topic created")
      .kv("topic", req.name)
      .kv("id", info->id)
      .kv("partitions", info->config.partitions);
  return protocol::TopicResponse{ToWire(*info)};
}

Result<protocol::Empty> AdminHandlers::DeleteTopic(const protocol::TopicNameRequest& req) {
  MutexLock admin(admin_mu_);
  if (cluster_ != nullptr) {
    RDMQ_RETURN_IF_ERROR(cluster_->DeleteTopic(req.name));  // each broker closes its replicas
  } else {
    if (Status s = meta_.DeleteTopic(req.name); !s.ok()) return MetadataToWire(s);
    for (auto& p : topics_.Remove(req.name)) topics_.Close(*p, true);
  }
  if (Status s = groups_.TopicDeleted(req.name); !s.ok()) {
    RDMQ_LOG(kWarn, "broker", "forgetting a deleted topic's committed offsets failed")
        .kv("topic", req.name)
        .kv("error", s);
  }
  RDMQ_LOG(kInfo, "broker", "topic deleted").kv("topic", req.name);
  return protocol::Empty{};
}

void AdminHandlers::FillLocal(Partition& p, protocol::PartitionInfo* pi) {
  MutexLock lock(p.mu);
  if (p.deleted()) return;
  pi->local = 1;
  pi->log_start_offset = p.log().LogStartOffset();
  pi->high_watermark = p.active().high_watermark;
  pi->active_segment_base = p.active().base;
  pi->exclusive_lease = p.exclusive() ? 1 : 0;
  for (const auto& s : p.log().Segments()) {
    ++pi->segments;
    pi->bytes += s.committed.value();
  }
}

Result<protocol::DescribeTopicResponse> AdminHandlers::DescribeTopic(const protocol::TopicNameRequest& req) {
  protocol::DescribeTopicResponse r;
  if (cluster_ != nullptr) {
    std::optional<ClusterTopic> t = cluster_->GetTopic(req.name);
    if (!t) return UnknownTopic(req.name);
    r.topic = ToWire(t->info);
    for (int32_t i = 0; i < static_cast<int32_t>(t->replicas.size()); ++i) {
      protocol::PartitionInfo pi;
      pi.partition = PartitionId(i);
      const cluster::PartitionState& st = t->states[static_cast<size_t>(i)];
      pi.leader = st.leader;
      pi.leader_epoch = st.leader_epoch;
      pi.replicas = t->replicas[static_cast<size_t>(i)];
      pi.isr = st.isr;
      if (auto p = topics_.FindReplica(req.name, PartitionId(i))) FillLocal(*p, &pi);
      r.partitions.push_back(std::move(pi));
    }
    return r;
  }
  std::optional<Topic> topic = topics_.Get(req.name);
  if (!topic) return UnknownTopic(req.name);
  r.topic = ToWire(topic->info);
  const auto self = static_cast<int32_t>(cfg_.broker_id);
  for (const auto& pp : topic->partitions) {
    protocol::PartitionInfo pi;
    pi.partition = pp->index();
    pi.leader = self;
    pi.replicas = {self};
    pi.isr = {self};
    FillLocal(*pp, &pi);
    if (pi.local == 0) continue;  // deleted meanwhile
    r.partitions.push_back(std::move(pi));
  }
  return r;
}

Result<protocol::ListTopicsResponse> AdminHandlers::ListTopics() {
  protocol::ListTopicsResponse r;
  for (const auto& t : Topics()) r.topics.push_back(ToWire(t));
  return r;
}

std::vector<metadata::TopicInfo> AdminHandlers::Topics() const {
  return cluster_ != nullptr ? cluster_->ListTopics() : meta_.ListTopics();
}

Result<metadata::TopicInfo> AdminHandlers::TopicNamed(const std::string& name) const {
  if (cluster_ == nullptr) return meta_.GetTopic(name);
  std::optional<ClusterTopic> t = cluster_->GetTopic(name);
  if (!t) return Status(metadata::MetadataErrc::kNoSuchTopic, name);
  return t->info;
}

protocol::DescribeClusterResponse AdminHandlers::DescribeCluster() const {
  if (cluster_ != nullptr) return cluster_->Describe();
  protocol::DescribeClusterResponse r;
  const auto self = static_cast<int32_t>(cfg_.broker_id);
  r.controller = self;
  r.this_broker = self;
  r.brokers.push_back({self, "", data_fabric_.address(), ""});
  return r;
}

Result<protocol::TopicResponse> AdminHandlers::AlterTopic(const protocol::AlterTopicRequest& req) {
  MutexLock admin(admin_mu_);
  if (cluster_ != nullptr) {
    std::optional<ClusterTopic> now = cluster_->GetTopic(req.name);
    if (!now) return UnknownTopic(req.name);
    RDMQ_ASSIGN_OR_RETURN(metadata::TopicConfig cfg, ApplyConfigs(now->info.config, req.configs));
    RDMQ_ASSIGN_OR_RETURN(metadata::TopicInfo info, cluster_->AlterTopic(req.name, cfg));
    groups_.TopicsChanged();
    return protocol::TopicResponse{ToWire(info)};
  }
  std::optional<Topic> topic = topics_.Get(req.name);
  if (!topic) return UnknownTopic(req.name);
  RDMQ_ASSIGN_OR_RETURN(metadata::TopicConfig cfg, ApplyConfigs(topic->info.config, req.configs));
  // New partitions are opened before the metadata says they exist: one that cannot be made
  // (a full disk, a file in the way) leaves the topic as it was, on disk and in the metadata, so
  // that a restart does not meet partitions it cannot open.
  metadata::TopicInfo next = topic->info;
  next.config = cfg;
  std::vector<std::shared_ptr<Partition>> added;
  if (Status s = topics_.OpenPartitions(next, static_cast<int32_t>(topic->partitions.size()), cfg.partitions,
                                        &added);
      !s.ok()) {
    return Status(WireError::kStorageError, s.ToString());
  }
  auto info = meta_.AlterTopic(req.name, cfg);
  if (!info.ok()) {
    for (auto& p : added) topics_.Close(*p, true);
    return MetadataToWire(info.status());
  }
  // The open partitions take the new config now (what applies when: Partition::Reconfigure);
  // new partitions open with it.
  Status reconfigured;
  for (const auto& pp : topic->partitions) {
    Partition& p = *pp;
    MutexLock lock(p.mu);
    if (p.deleted()) continue;
    if (Status s = p.Reconfigure(info->config); !s.ok()) {
      RDMQ_LOG(kError, "broker", "reconfiguring a partition failed")
          .kv("partition", p.where())
          .kv("error", s);
      if (reconfigured.ok()) reconfigured = Status(WireError::kStorageError, p.where() + ": " + s.ToString());
    }
  }
  topics_.Extend(*info, std::move(added));
  groups_.TopicsChanged();
  RDMQ_LOG(kInfo, "broker", "topic altered").kv("topic", req.name).kv("partitions", info->config.partitions);
  RDMQ_RETURN_IF_ERROR(reconfigured);
  return protocol::TopicResponse{ToWire(*info)};
}

Result<protocol::InitProducerIdResponse> AdminHandlers::InitProducerId() {
  if (cluster_ != nullptr) {
    RDMQ_ASSIGN_OR_RETURN(ProducerId pid, cluster_->NextProducerId());
    return protocol::InitProducerIdResponse{pid, 0};
  }
  auto id = meta_.AllocateProducerId();
  if (!id.ok()) return Status(WireError::kStorageError, id.status().ToString());
  return protocol::InitProducerIdResponse{*id, 0};
}

}  // namespace rdmq::broker::internal
