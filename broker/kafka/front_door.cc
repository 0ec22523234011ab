#include "broker/kafka/front_door.h"

#include "broker/kafka/session.h"
#include "rdmq/common/log.h"
#include "rdmq/kafka/api.h"
#include "rdmq/kafka/api_versions.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using kafka::ApiKey;
using kafka::ErrorCode;
using protocol::WireError;

kafka::ErrorCode ToKafkaError(const Status& s) {
  if (s.ok()) return ErrorCode::kNone;
  if (s.code().category() == module_error_category<WireError>()) {
    switch (static_cast<WireError>(s.code().value())) {
      case WireError::kInvalidRequest:
        return ErrorCode::kInvalidRequest;
      case WireError::kUnknownTopic:
      case WireError::kUnknownPartition:
        return ErrorCode::kUnknownTopicOrPartition;
      case WireError::kTopicExists:
        return ErrorCode::kTopicAlreadyExists;
      case WireError::kInvalidConfig:
        return ErrorCode::kInvalidConfig;
      case WireError::kInvalidTopicName:
        return ErrorCode::kInvalidTopicException;
      case WireError::kOffsetOutOfRange:
        return ErrorCode::kOffsetOutOfRange;
      case WireError::kRecordTooLarge:
        return ErrorCode::kMessageTooLarge;
      case WireError::kCorruptMessage:
        return ErrorCode::kCorruptMessage;
      case WireError::kDuplicateSequence:
        return ErrorCode::kDuplicateSequenceNumber;
      case WireError::kOutOfOrderSequence:
        return ErrorCode::kOutOfOrderSequenceNumber;
      case WireError::kInvalidProducerEpoch:
        return ErrorCode::kInvalidProducerEpoch;
      // Retriable for a Kafka client: a busy partition (an exclusive rdmq producer writes it), a
      // segment roll in progress, the broker stopping.
      case WireError::kPartitionBusy:
      case WireError::kStaleLocation:
      case WireError::kLeaseExpired:
      case WireError::kOutOfCredit:
        return ErrorCode::kNotEnoughReplicas;
      case WireError::kUnavailable:
        return ErrorCode::kRequestTimedOut;
      case WireError::kStorageError:
        return ErrorCode::kKafkaStorageError;
      case WireError::kInvalidGroupId:
        return ErrorCode::kInvalidGroupId;
      case WireError::kUnknownGroup:
        return ErrorCode::kGroupIdNotFound;
      case WireError::kGroupNotEmpty:
        return ErrorCode::kNonEmptyGroup;
      case WireError::kUnknownMemberId:
        return ErrorCode::kUnknownMemberId;
      case WireError::kFencedMemberEpoch:
      case WireError::kStaleMemberEpoch:
        return ErrorCode::kIllegalGeneration;
      case WireError::kInconsistentAssignor:
        return ErrorCode::kInconsistentGroupProtocol;
      case WireError::kGroupMaxSizeReached:
        return ErrorCode::kGroupMaxSizeReached;
      case WireError::kNotSupported:
        return ErrorCode::kUnsupportedVersion;
      case WireError::kTopicAuthorizationFailed:
        return ErrorCode::kTopicAuthorizationFailed;
      case WireError::kGroupAuthorizationFailed:
        return ErrorCode::kGroupAuthorizationFailed;
      case WireError::kClusterAuthorizationFailed:
        return ErrorCode::kClusterAuthorizationFailed;
      case WireError::kNotLeader:
        return ErrorCode::kNotLeaderOrFollower;
      case WireError::kNotEnoughReplicas:
        return ErrorCode::kNotEnoughReplicas;
      case WireError::kNotCoordinator:
        return ErrorCode::kNotCoordinator;
      case WireError::kInternal:
      default:
        return ErrorCode::kUnknownServerError;
    }
  }
  if (s.is(Errc::kUnavailable) || s.is(Errc::kTimeout)) return ErrorCode::kRequestTimedOut;
  if (s.is(Errc::kIoError) || s.is(Errc::kNoSpace)) return ErrorCode::kKafkaStorageError;
  if (s.is(Errc::kCorruption)) return ErrorCode::kCorruptMessage;
  if (s.is(Errc::kInvalidArgument)) return ErrorCode::kInvalidRequest;
  return ErrorCode::kUnknownServerError;
}

std::string_view KafkaFrontDoor::User(const KafkaCall& call) {
  return call.frame->session ? call.frame->session->Principal() : std::string_view(kAnonymousUser);
}

bool KafkaFrontDoor::May(const KafkaCall& call, metadata::AclOperation op, metadata::AclResourceType type,
                         std::string_view name) const {
  return !d_.authz->enabled() || d_.authz->Allowed(User(call), op, type, name);
}

kafka::ErrorCode KafkaFrontDoor::GroupGate(const KafkaCall& call, metadata::AclOperation op,
                                           std::string_view group) const {
  if (!MayGroup(call, op, group)) return ErrorCode::kGroupAuthorizationFailed;
  if (d_.cluster != nullptr && d_.cluster->CoordinatorOf(std::string(group)) != d_.cluster->id()) {
    return ErrorCode::kNotCoordinator;
  }
  return ErrorCode::kNone;
}

void KafkaFrontDoor::Malformed(const KafkaCall& call, const Status& why) const {
  RDMQ_LOG(kWarn, "kafka", "malformed request; closing the connection")
      .kv("peer", call.frame->peer)
      .kv("api", kafka::ApiName(call.header.key()))
      .kv("version", static_cast<int64_t>(call.header.api_version))
      .kv("client", call.client_id())
      .kv("error", why);
  Close(call);
}

void KafkaFrontDoor::HandleBatch(std::vector<KafkaRequest> requests) {
  // A run of supported Produce requests goes to ProduceRun at once; anything else ends the run
  // first, so requests are served in the order they came.
  std::vector<std::pair<KafkaCall, Reader>> run;
  for (KafkaRequest& req : requests) {
    Reader r(std::span<const std::byte>(req.frame->bytes.data(), req.frame->bytes.size()));
    auto header = kafka::DecodeRequestHeader(r);
    if (header.ok() && header->key() == ApiKey::kProduce && Authenticated(*req.frame) &&
        kafka::CheckSupported(*header).ok()) {
      run.emplace_back(KafkaCall{*header, std::move(req.frame), std::move(req.respond)}, r);
      continue;
    }
    if (!run.empty()) ProduceRun(run);
    run.clear();
    Handle(std::move(req.frame), std::move(req.respond));
  }
  if (!run.empty()) ProduceRun(run);
}

void KafkaFrontDoor::Handle(std::shared_ptr<const KafkaFrame> frame, KafkaRespond respond) {
  if (frame->session && frame->session->raw_tokens && !frame->session->authenticated) {
    RawSaslToken(*frame, respond);
    return;
  }
  Reader r(std::span<const std::byte>(frame->bytes.data(), frame->bytes.size()));
  auto header = kafka::DecodeRequestHeader(r);
  if (!header.ok()) {
    RDMQ_LOG(kWarn, "kafka", "malformed request header; closing the connection")
        .kv("peer", frame->peer)
        .kv("error", header.status());
    respond(KafkaReply{.close = true});
    return;
  }
  KafkaCall call{*header, std::move(frame), std::move(respond)};
  const ApiKey key = call.header.key();
  if (key == ApiKey::kApiVersions) {
    ApiVersions(call, r);
    return;
  }
  if (Status s = kafka::CheckSupported(call.header); !s.ok()) {
    // Clients learn the versions from ApiVersions; anything else is a client bug or garbage.
    RDMQ_LOG(kWarn, "kafka", "unsupported API or version; closing the connection")
        .kv("peer", call.frame->peer)
        .kv("api_key", static_cast<int64_t>(call.header.api_key))
        .kv("version", static_cast<int64_t>(call.header.api_version))
        .kv("client", call.client_id());
    Close(call);
    return;
  }
  if (key != ApiKey::kSaslHandshake && key != ApiKey::kSaslAuthenticate && !Authenticated(*call.frame)) {
    RDMQ_LOG(kInfo, "kafka", "request before SASL authentication; closing the connection")
        .kv("peer", call.frame->peer)
        .kv("api", kafka::ApiName(key))
        .kv("client", call.client_id());
    Close(call);
    return;
  }
  switch (key) {
    case ApiKey::kProduce:
      return Produce(std::move(call), r);
    case ApiKey::kFetch:
      return Fetch(std::move(call), r);
    case ApiKey::kListOffsets:
      return ListOffsets(call, r);
    case ApiKey::kMetadata:
      return Metadata(call, r);
    case ApiKey::kOffsetCommit:
      return OffsetCommit(call, r);
    case ApiKey::kOffsetFetch:
      return OffsetFetch(call, r);
    case ApiKey::kFindCoordinator:
      return FindCoordinator(call, r);
    case ApiKey::kJoinGroup:
      return JoinGroup(std::move(call), r);
    case ApiKey::kHeartbeat:
      return Heartbeat(call, r);
    case ApiKey::kLeaveGroup:
      return LeaveGroup(call, r);
    case ApiKey::kSyncGroup:
      return SyncGroup(std::move(call), r);
    case ApiKey::kDescribeGroups:
      return DescribeGroups(call, r);
    case ApiKey::kListGroups:
      return ListGroups(call, r);
    case ApiKey::kCreateTopics:
      return CreateTopics(call, r);
    case ApiKey::kDeleteTopics:
      return DeleteTopics(call, r);
    case ApiKey::kInitProducerId:
      return InitProducerId(call, r);
    case ApiKey::kDescribeConfigs:
      return DescribeConfigs(call, r);
    case ApiKey::kCreatePartitions:
      return CreatePartitions(call, r);
    case ApiKey::kDeleteGroups:
      return DeleteGroups(call, r);
    case ApiKey::kSaslHandshake:
      return SaslHandshake(call, r);
    case ApiKey::kSaslAuthenticate:
      return SaslAuthenticate(call, r);
    case ApiKey::kApiVersions:
      break;
  }
  Close(call);
}

}  // namespace rdmq::broker::internal
