// The RPCs of sessions and topic administration (docs/protocol.md section 3): Hello,
// CreateTopic, DeleteTopic, DescribeTopic, ListTopics, AlterTopic, InitProducerId.
//
// Threading: Hello runs on the RPC dispatcher, the rest on the worker pool; topic creation,
// deletion and changes are serialised by the handlers' own lock.
#pragma once

#include "authorizer.h"
#include "group_coordinator.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/mutex.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/metadata/store.h"
#include "rdmq/rpc/server.h"
#include "session.h"
#include "topic_table.h"

namespace rdmq::broker::internal {

class AdminHandlers {
 public:
  AdminHandlers(const BrokerConfig& cfg, const fabric::Fabric& data_fabric, metadata::MetadataStore& meta,
                SessionTable& sessions, TopicTable& topics, GroupCoordinator& groups, const Authorizer& authz)
      : cfg_(cfg),
        data_fabric_(data_fabric),
        meta_(meta),
        sessions_(sessions),
        topics_(topics),
        groups_(groups),
        authz_(authz) {}

  Status Register(rpc::Server& server);

  // Topic administration, for the RPCs and for the Kafka listener alike (one broker state).
  Result<protocol::TopicResponse> CreateTopic(const protocol::CreateTopicRequest& req) EXCLUDES(admin_mu_);
  Result<protocol::Empty> DeleteTopic(const protocol::TopicNameRequest& req) EXCLUDES(admin_mu_);
  Result<protocol::DescribeTopicResponse> DescribeTopic(const protocol::TopicNameRequest& req);
  Result<protocol::ListTopicsResponse> ListTopics();
  Result<protocol::TopicResponse> AlterTopic(const protocol::AlterTopicRequest& req) EXCLUDES(admin_mu_);
  Result<protocol::InitProducerIdResponse> InitProducerId();

 private:
  Result<protocol::HelloResponse> Hello(const rpc::RequestContext& ctx, const protocol::HelloRequest& req);

  const BrokerConfig& cfg_;
  const fabric::Fabric& data_fabric_;
  metadata::MetadataStore& meta_;
  SessionTable& sessions_;
  TopicTable& topics_;
  GroupCoordinator& groups_;  // told of topic changes
  const Authorizer& authz_;
  Mutex admin_mu_;  // serialises topic creation, deletion and changes
};

}  // namespace rdmq::broker::internal
