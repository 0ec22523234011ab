#include "rdmq/protocol/messages.h"

namespace rdmq::protocol {

std::string_view ApiName(Api api) noexcept {
  switch (api) {
    case Api::kHello:
      return "Hello";
    case Api::kSaslAuthenticate:
      return "SaslAuthenticate";
    case Api::kCreateTopic:
      return "CreateTopic";
    case Api::kDeleteTopic:
      return "DeleteTopic";
    case Api::kDescribeTopic:
      return "DescribeTopic";
    case Api::kListTopics:
      return "ListTopics";
    case Api::kAlterTopic:
      return "AlterTopic";
    case Api::kDescribeCluster:
      return "DescribeCluster";
    case Api::kReassignPartition:
      return "ReassignPartition";
    case Api::kInitProducerId:
      return "InitProducerId";
    case Api::kOpenProduce:
      return "OpenProduce";
    case Api::kRenewLease:
      return "RenewLease";
    case Api::kReleaseLease:
      return "ReleaseLease";
    case Api::kCommit:
      return "Commit";
    case Api::kOpenConsume:
      return "OpenConsume";
    case Api::kGetSegment:
      return "GetSegment";
    case Api::kListOffsets:
      return "ListOffsets";
    case Api::kWatch:
      return "Watch";
    case Api::kGroupHeartbeat:
      return "GroupHeartbeat";
    case Api::kOffsetCommit:
      return "OffsetCommit";
    case Api::kOffsetFetch:
      return "OffsetFetch";
    case Api::kListGroups:
      return "ListGroups";
    case Api::kDescribeGroup:
      return "DescribeGroup";
    case Api::kDeleteGroup:
      return "DeleteGroup";
    case Api::kFindCoordinator:
      return "FindCoordinator";
    case Api::kOpenReplica:
      return "OpenReplica";
    case Api::kReplicaCommit:
      return "ReplicaCommit";
    case Api::kReplicaTruncate:
      return "ReplicaTruncate";
    case Api::kCreateUser:
      return "CreateUser";
    case Api::kAlterUser:
      return "AlterUser";
    case Api::kDeleteUser:
      return "DeleteUser";
    case Api::kListUsers:
      return "ListUsers";
    case Api::kCreateAcls:
      return "CreateAcls";
    case Api::kDeleteAcls:
      return "DeleteAcls";
    case Api::kListAcls:
      return "ListAcls";
  }
  return "Unknown";
}

std::string EncodeError(WireError error, std::string_view message) {
  ResponseHeader h{static_cast<uint16_t>(error), std::string(message.substr(0, kMaxStringBytes))};
  return Encode(h);
}

WireError ToWireError(const Status& s) {
  if (s.code().category() == module_error_category<WireError>())
    return static_cast<WireError>(s.code().value());
  if (s.is(Errc::kNotFound)) return WireError::kUnknownTopic;
  if (s.is(Errc::kAlreadyExists)) return WireError::kTopicExists;
  if (s.is(Errc::kInvalidArgument)) return WireError::kInvalidRequest;
  if (s.is(Errc::kOutOfRange)) return WireError::kOffsetOutOfRange;
  if (s.is(Errc::kCorruption)) return WireError::kCorruptMessage;
  if (s.is(Errc::kResourceExhausted)) return WireError::kOutOfCredit;
  if (s.is(Errc::kUnavailable)) return WireError::kUnavailable;
  if (s.is(Errc::kIoError) || s.is(Errc::kNoSpace)) return WireError::kStorageError;
  if (s.is(Errc::kUnsupported)) return WireError::kNotSupported;
  return WireError::kInternal;
}

std::string EncodeError(const Status& status) {
  std::string msg(status.context());
  if (msg.empty()) msg = status.code().message();
  return EncodeError(ToWireError(status), msg);
}

}  // namespace rdmq::protocol
