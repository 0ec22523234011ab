// ApiVersions, Metadata (with topic auto-creation), FindCoordinator, InitProducerId.
#include "broker/kafka/front_door.h"
#include "rdmq/common/log.h"
#include "rdmq/kafka/admin.h"
#include "rdmq/kafka/api_versions.h"
#include "rdmq/kafka/groups.h"
#include "rdmq/kafka/metadata_offsets.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using kafka::ErrorCode;
using metadata::AclOperation;

void KafkaFrontDoor::ApiVersions(const KafkaCall& call, Reader& r) {
  // A version this broker does not know is answered too (in v0, with UNSUPPORTED_VERSION and the
  // table), so the client can pick one; its body is not read.
  if (kafka::Supported(kafka::ApiKey::kApiVersions, call.header.api_version)) {
    kafka::ApiVersionsRequest req;
    if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  }
  auto w = std::make_shared<kafka::Writer>();
  kafka::WriteApiVersionsReply(*w, call.header.correlation_id, call.header.api_version);
  KafkaReply reply;
  for (const auto& c : w->chunks()) reply.chunks.push_back(c);
  reply.keep = std::move(w);
  call.respond(std::move(reply));
}

namespace {

kafka::MetadataTopic DescribeTopic(const metadata::TopicInfo& t, int32_t node) {
  kafka::MetadataTopic mt;
  mt.name = t.name;
  for (int32_t i = 0; i < t.config.partitions; ++i) {
    kafka::MetadataPartition mp;
    mp.index = i;
    mp.leader_id = node;
    mp.replica_nodes = {node};
    mp.isr_nodes = {node};
    mt.partitions.push_back(std::move(mp));
  }
  return mt;
}

}  // namespace

void KafkaFrontDoor::Metadata(const KafkaCall& call, Reader& r) {
  kafka::MetadataRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  const int32_t node = static_cast<int32_t>(d_.cfg->broker_id);
  kafka::MetadataResponse resp;
  resp.brokers.push_back({node, host_, port_, std::nullopt});
  resp.cluster_id = "rdmq-" + std::to_string(node);
  resp.controller_id = node;
  // Null (v1+), or an empty list in v0: every topic.
  if (!req.topics || (call.header.api_version == 0 && req.topics->empty())) {
    for (const auto& t : d_.meta->ListTopics()) {
      if (MayTopic(call, AclOperation::kDescribe, t.name)) resp.topics.push_back(DescribeTopic(t, node));
    }
  } else {
    // Before v4 the broker decides whether a Metadata request creates topics.
    const bool create =
        d_.cfg->auto_create_topics && (call.header.api_version < 4 || req.allow_auto_topic_creation);
    for (const std::string_view name : *req.topics) {
      const std::string n(name);
      if (!MayTopic(call, AclOperation::kDescribe, n)) {
        kafka::MetadataTopic mt;
        mt.name = n;
        mt.error_code = ErrorCode::kTopicAuthorizationFailed;
        resp.topics.push_back(std::move(mt));
        continue;
      }
      auto t = d_.meta->GetTopic(n);
      if (!t.ok() && create && d_.authz->CheckCreateTopic(User(call), n).ok()) {
        auto made = d_.admin->CreateTopic(protocol::CreateTopicRequest{n, {}});
        if (made.ok()) {
          RDMQ_LOG(kInfo, "kafka", "topic auto-created").kv("topic", n).kv("client", call.client_id());
        } else if (!made.status().is(protocol::WireError::kTopicExists)) {  // (else: created meanwhile)
          kafka::MetadataTopic mt;
          mt.name = n;
          mt.error_code = ToKafkaError(made.status());
          resp.topics.push_back(std::move(mt));
          continue;
        }
        t = d_.meta->GetTopic(n);
      }
      if (!t.ok()) {
        kafka::MetadataTopic mt;
        mt.name = n;
        mt.error_code = ErrorCode::kUnknownTopicOrPartition;
        resp.topics.push_back(std::move(mt));
        continue;
      }
      resp.topics.push_back(DescribeTopic(*t, node));
    }
  }
  Reply(call, resp);
}

void KafkaFrontDoor::FindCoordinator(const KafkaCall& call, Reader& r) {
  kafka::FindCoordinatorRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::FindCoordinatorResponse resp;
  if (req.key_type != 0) {
    // Transactions are not supported: there is no transaction coordinator.
    resp.error_code = ErrorCode::kCoordinatorNotAvailable;
    resp.error_message = "rdmq has no transaction coordinator";
  } else if (Status s = metadata::ValidateGroupId(std::string(req.key)); !s.ok()) {
    resp.error_code = ErrorCode::kInvalidGroupId;
    resp.error_message = s.ToString();
  } else if (!MayGroup(call, AclOperation::kDescribe, req.key)) {
    resp.error_code = ErrorCode::kGroupAuthorizationFailed;
    resp.error_message = "not allowed to describe group '" + std::string(req.key) + "'";
  } else {
    resp.node_id = static_cast<int32_t>(d_.cfg->broker_id);
    resp.host = host_;
    resp.port = port_;
  }
  Reply(call, resp);
}

void KafkaFrontDoor::InitProducerId(const KafkaCall& call, Reader& r) {
  kafka::InitProducerIdRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::InitProducerIdResponse resp;
  if (req.transactional_id) {
    resp.error_code = ErrorCode::kTransactionalIdAuthorizationFailed;
  } else if (!d_.authz->CheckIdempotentWrite(User(call)).ok()) {
    resp.error_code = ErrorCode::kClusterAuthorizationFailed;
  } else if (auto id = d_.admin->InitProducerId(); id.ok()) {
    // The same allocator as rdmq's own producers: ids never collide between the two paths.
    resp.producer_id = id->producer_id.value();
    resp.producer_epoch = id->producer_epoch;
  } else {
    resp.error_code = ToKafkaError(id.status());
  }
  Reply(call, resp);
}

}  // namespace rdmq::broker::internal
