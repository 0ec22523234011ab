// CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs: Kafka's topic administration on
// the broker's own (AdminHandlers), so a topic made here is the same as one `rdmq topic create`
// makes.
#include "rdmq/kafka/admin.h"

#include <set>

#include "broker/kafka/front_door.h"
#include "rdmq/metadata/topic.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using kafka::ErrorCode;
using metadata::AclOperation;
using metadata::AclResourceType;

namespace {

// The message of a refusal, for the versions that carry one.
std::optional<std::string> Why(const Status& s) {
  if (s.ok()) return std::nullopt;
  return std::string(s.context().empty() ? s.ToString() : s.context());
}

}  // namespace

void KafkaFrontDoor::CreateTopics(const KafkaCall& call, Reader& r) {
  kafka::CreateTopicsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  const int32_t node = static_cast<int32_t>(d_.cfg->broker_id);
  kafka::CreateTopicsResponse resp;
  std::set<std::string_view> seen;
  for (const auto& t : req.topics) {
    kafka::CreateTopicsTopicResponse out;
    out.name = std::string(t.name);
    auto fail = [&](ErrorCode code, std::string msg) {
      out.error_code = code;
      out.error_message = std::move(msg);
    };
    protocol::CreateTopicRequest ct{out.name, {}};
    int32_t partitions = t.num_partitions;
    if (!seen.insert(t.name).second) {
      fail(ErrorCode::kInvalidRequest, "topic named twice in one request");
    } else if (Status may = d_.authz->CheckCreateTopic(User(call), out.name); !may.ok()) {
      fail(ErrorCode::kTopicAuthorizationFailed, std::string(may.context()));
    } else if (t.replication_factor > 1) {
      fail(ErrorCode::kInvalidReplicationFactor,
           "replication factor " + std::to_string(t.replication_factor) + " is more than this one broker");
    } else if (!t.assignments.empty() && t.num_partitions != -1) {
      fail(ErrorCode::kInvalidRequest, "both a partition count and manual assignments");
    } else {
      for (const auto& a : t.assignments) {
        if (a.broker_ids.size() != 1 || a.broker_ids[0] != node) {
          fail(ErrorCode::kInvalidReplicaAssignment,
               "partitions can only be assigned to broker " + std::to_string(node));
          break;
        }
      }
      if (!t.assignments.empty()) partitions = static_cast<int32_t>(t.assignments.size());
    }
    if (out.error_code == ErrorCode::kNone) {
      if (partitions > 0) ct.configs.push_back({"partitions", std::to_string(partitions)});
      for (const auto& c : t.configs) {
        if (!c.value) continue;  // null: the default
        ct.configs.push_back({std::string(c.name), std::string(*c.value)});
      }
      if (req.validate_only) {
        // Checks the name and the configs without creating anything.
        if (Status s = metadata::ValidateTopicName(out.name); !s.ok()) {
          fail(ErrorCode::kInvalidTopicException, s.ToString());
        } else if (d_.meta->GetTopic(out.name).ok()) {
          fail(ErrorCode::kTopicAlreadyExists, "topic '" + out.name + "' already exists");
        } else {
          metadata::TopicConfig cfg = d_.cfg->topic_defaults;
          for (const auto& e : ct.configs) {
            if (Status bad = metadata::TopicConfigDef().Set(&cfg, e.key, e.value); !bad.ok()) {
              fail(ErrorCode::kInvalidConfig, bad.ToString());
              break;
            }
          }
        }
      } else if (auto made = d_.admin->CreateTopic(ct); !made.ok()) {
        fail(ToKafkaError(made.status()), Why(made.status()).value_or(""));
      }
    }
    resp.topics.push_back(std::move(out));
  }
  Reply(call, resp);
}

void KafkaFrontDoor::DeleteTopics(const KafkaCall& call, Reader& r) {
  kafka::DeleteTopicsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::DeleteTopicsResponse resp;
  for (const std::string_view name : req.topic_names) {
    kafka::DeleteTopicsTopicResponse out;
    out.name = std::string(name);
    out.error_code = MayTopic(call, AclOperation::kDelete, name)
                         ? ToKafkaError(d_.admin->DeleteTopic(protocol::TopicNameRequest{out.name}).status())
                         : ErrorCode::kTopicAuthorizationFailed;
    resp.responses.push_back(std::move(out));
  }
  Reply(call, resp);
}

void KafkaFrontDoor::CreatePartitions(const KafkaCall& call, Reader& r) {
  kafka::CreatePartitionsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::CreatePartitionsResponse resp;
  for (const auto& t : req.topics) {
    kafka::CreatePartitionsTopicResponse out;
    out.name = std::string(t.name);
    auto current = d_.meta->GetTopic(out.name);
    if (!MayTopic(call, AclOperation::kAlter, out.name)) {
      out.error_code = ErrorCode::kTopicAuthorizationFailed;
      out.error_message = "not allowed to alter topic '" + out.name + "'";
    } else if (!current.ok()) {
      out.error_code = ErrorCode::kUnknownTopicOrPartition;
      out.error_message = "unknown topic '" + out.name + "'";
    } else if (t.count <= current->config.partitions) {
      out.error_code = ErrorCode::kInvalidPartitions;
      out.error_message = "topic '" + out.name + "' has " + std::to_string(current->config.partitions) +
                          " partitions; the new count must be larger";
    } else if (!req.validate_only) {
      auto done = d_.admin->AlterTopic(
          protocol::AlterTopicRequest{out.name, {{"partitions", std::to_string(t.count)}}});
      out.error_code = ToKafkaError(done.status());
      out.error_message = Why(done.status());
    }
    resp.results.push_back(std::move(out));
  }
  Reply(call, resp);
}

void KafkaFrontDoor::DescribeConfigs(const KafkaCall& call, Reader& r) {
  kafka::DescribeConfigsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::DescribeConfigsResponse resp;
  for (const auto& res : req.resources) {
    kafka::DescribeConfigsResult out;
    out.resource_type = res.resource_type;
    out.resource_name = std::string(res.resource_name);
    std::vector<std::pair<std::string, std::string>> entries;
    bool from_topic = false;
    if (res.resource_type == kafka::kResourceTopic) {
      auto t = d_.meta->GetTopic(out.resource_name);
      if (!MayTopic(call, AclOperation::kDescribe, out.resource_name)) {
        out.error_code = ErrorCode::kTopicAuthorizationFailed;
        out.error_message = "not allowed to describe topic '" + out.resource_name + "'";
      } else if (!t.ok()) {
        out.error_code = ErrorCode::kUnknownTopicOrPartition;
        out.error_message = "unknown topic '" + out.resource_name + "'";
      } else {
        entries = metadata::ConfigEntries(t->config);
        from_topic = true;
      }
    } else if (res.resource_type == kafka::kResourceBroker) {
      if (May(call, AclOperation::kDescribe, AclResourceType::kCluster, metadata::kClusterResourceName)) {
        entries = BrokerConfigDef().Entries(*d_.cfg);
      } else {
        out.error_code = ErrorCode::kClusterAuthorizationFailed;
        out.error_message = "not allowed to describe the cluster";
      }
    } else {
      out.error_code = ErrorCode::kInvalidRequest;
      out.error_message = "resource type " + std::to_string(res.resource_type) + " is not described";
    }
    const auto defaults = metadata::ConfigEntries(d_.cfg->topic_defaults);
    for (auto& [k, v] : entries) {
      if (res.configuration_keys && std::find(res.configuration_keys->begin(), res.configuration_keys->end(),
                                              k) == res.configuration_keys->end()) {
        continue;
      }
      kafka::DescribeConfigsEntry e;
      e.name = k;
      e.value = v;
      const bool is_default =
          from_topic && std::find(defaults.begin(), defaults.end(), std::pair(k, v)) != defaults.end();
      e.is_default = is_default;
      // Kafka's config sources: 1 dynamic topic, 4 static broker, 5 default.
      e.config_source = static_cast<int8_t>(from_topic ? (is_default ? 5 : 1) : 4);
      e.read_only = !from_topic;
      out.configs.push_back(std::move(e));
    }
    resp.results.push_back(std::move(out));
  }
  Reply(call, resp);
}

}  // namespace rdmq::broker::internal
