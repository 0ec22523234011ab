// The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed offsets
// (OffsetCommit, OffsetFetch), ListGroups, DescribeGroups, DeleteGroups: on the broker's
// GroupCoordinator, so a group id is one group whichever protocol its members speak and the
// offsets are the same durable offsets `rdmq group describe` shows.
#include "rdmq/kafka/groups.h"

#include "broker/kafka/front_door.h"
#include "rdmq/group/classic.h"
#include "rdmq/group/errors.h"
#include "rdmq/kafka/admin.h"
#include "rdmq/kafka/metadata_offsets.h"
#include "rdmq/metadata/offsets.h"

namespace rdmq::broker::internal {

using group::ClassicErrc;
using kafka::ErrorCode;
using metadata::AclOperation;

namespace {

ErrorCode GroupError(const Status& s) {
  if (s.ok()) return ErrorCode::kNone;
  if (s.code().category() != module_error_category<ClassicErrc>()) return ToKafkaError(s);
  switch (static_cast<ClassicErrc>(s.code().value())) {
    case ClassicErrc::kUnknownMemberId:
      return ErrorCode::kUnknownMemberId;
    case ClassicErrc::kIllegalGeneration:
      return ErrorCode::kIllegalGeneration;
    case ClassicErrc::kRebalanceInProgress:
      return ErrorCode::kRebalanceInProgress;
    case ClassicErrc::kInconsistentGroupProtocol:
      return ErrorCode::kInconsistentGroupProtocol;
    case ClassicErrc::kInvalidSessionTimeout:
      return ErrorCode::kInvalidSessionTimeout;
    case ClassicErrc::kMemberIdRequired:
      return ErrorCode::kMemberIdRequired;
    case ClassicErrc::kFencedInstanceId:
      return ErrorCode::kFencedInstanceId;
    case ClassicErrc::kGroupMaxSizeReached:
      return ErrorCode::kGroupMaxSizeReached;
    case ClassicErrc::kCoordinatorNotAvailable:
      return ErrorCode::kCoordinatorNotAvailable;
    case ClassicErrc::kInvalidGroupId:
      return ErrorCode::kInvalidGroupId;
    case ClassicErrc::kNotCoordinator:
      return ErrorCode::kNotCoordinator;
    case ClassicErrc::kGroupIdNotFound:
      return ErrorCode::kGroupIdNotFound;
    case ClassicErrc::kNonEmptyGroup:
      return ErrorCode::kNonEmptyGroup;
    case ClassicErrc::kUnknownTopicOrPartition:
      return ErrorCode::kUnknownTopicOrPartition;
    case ClassicErrc::kOffsetMetadataTooLarge:
      return ErrorCode::kOffsetMetadataTooLarge;
    case ClassicErrc::kUnknownServerError:
    default:
      return ErrorCode::kUnknownServerError;
  }
}

std::string Str(std::optional<std::string_view> s) { return std::string(s.value_or("")); }

// Empty: null (Kafka's nullable strings).
std::optional<std::string> Opt(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

kafka::ByteSpan Bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

void KafkaFrontDoor::JoinGroup(KafkaCall call, Reader& r) {
  kafka::JoinGroupRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  if (const ErrorCode gate = GroupGate(call, AclOperation::kRead, req.group_id); gate != ErrorCode::kNone) {
    kafka::JoinGroupResponse resp;
    resp.error_code = gate;
    return Reply(call, resp);
  }
  group::ClassicJoinRequest j;
  j.member_id = std::string(req.member_id);
  j.instance_id = Str(req.group_instance_id);
  j.client_id = call.client_id();
  j.client_host = "/" + call.frame->peer.substr(0, call.frame->peer.rfind(':'));
  j.protocol_type = std::string(req.protocol_type);
  for (const auto& p : req.protocols) {
    j.protocols.push_back({std::string(p.name),
                           std::string(reinterpret_cast<const char*>(p.metadata.data()), p.metadata.size())});
  }
  j.session_timeout = std::chrono::milliseconds(req.session_timeout_ms);
  j.rebalance_timeout = std::chrono::milliseconds(req.rebalance_timeout_ms >= 0 ? req.rebalance_timeout_ms
                                                                                : req.session_timeout_ms);
  j.require_known_member_id = call.header.api_version >= 4;
  const int16_t version = call.header.api_version;
  d_.groups->JoinGroup(
      std::string(req.group_id), j, [call = std::move(call), version](group::ClassicJoinResponse jr) {
        kafka::JoinGroupResponse resp;
        resp.error_code = GroupError(jr.status);
        resp.generation_id = jr.generation_id;
        resp.protocol_name = jr.protocol_name;
        resp.leader = jr.leader_id;
        resp.member_id = jr.member_id;
        auto keep = std::make_shared<group::ClassicJoinResponse>(std::move(jr));
        for (const auto& m : keep->members) {
          resp.members.push_back(kafka::JoinGroupMember{m.member_id, Opt(m.instance_id), Bytes(m.metadata)});
        }
        (void)version;
        Reply(call, resp, keep);
      });
}

void KafkaFrontDoor::SyncGroup(KafkaCall call, Reader& r) {
  kafka::SyncGroupRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  if (const ErrorCode gate = GroupGate(call, AclOperation::kRead, req.group_id); gate != ErrorCode::kNone) {
    kafka::SyncGroupResponse resp;
    resp.error_code = gate;
    return Reply(call, resp);
  }
  group::ClassicSyncRequest sr;
  sr.member_id = std::string(req.member_id);
  sr.instance_id = Str(req.group_instance_id);
  sr.generation_id = req.generation_id;
  for (const auto& a : req.assignments) {
    sr.assignments.emplace_back(
        std::string(a.member_id),
        std::string(reinterpret_cast<const char*>(a.assignment.data()), a.assignment.size()));
  }
  d_.groups->SyncGroup(std::string(req.group_id), sr,
                       [call = std::move(call)](group::ClassicSyncResponse res) {
                         kafka::SyncGroupResponse resp;
                         resp.error_code = GroupError(res.status);
                         auto keep = std::make_shared<std::string>(std::move(res.assignment));
                         resp.assignment = Bytes(*keep);
                         Reply(call, resp, keep);
                       });
}

void KafkaFrontDoor::Heartbeat(const KafkaCall& call, Reader& r) {
  kafka::HeartbeatRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  group::ClassicHeartbeatRequest h{std::string(req.member_id), Str(req.group_instance_id), req.generation_id};
  kafka::HeartbeatResponse resp;
  const ErrorCode gate = GroupGate(call, AclOperation::kRead, req.group_id);
  resp.error_code =
      gate == ErrorCode::kNone ? GroupError(d_.groups->ClassicHeartbeat(std::string(req.group_id), h)) : gate;
  Reply(call, resp);
}

void KafkaFrontDoor::LeaveGroup(const KafkaCall& call, Reader& r) {
  kafka::LeaveGroupRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  std::vector<group::ClassicLeaveMember> members;
  if (call.header.api_version >= 3) {
    for (const auto& m : req.members) members.push_back({std::string(m.member_id), Str(m.group_instance_id)});
  } else {
    members.push_back({std::string(req.member_id), ""});
  }
  if (const ErrorCode gate = GroupGate(call, AclOperation::kRead, req.group_id); gate != ErrorCode::kNone) {
    kafka::LeaveGroupResponse resp;
    resp.error_code = gate;
    return Reply(call, resp);
  }
  const group::ClassicLeaveResponse lr = d_.groups->LeaveGroup(std::string(req.group_id), members);
  kafka::LeaveGroupResponse resp;
  resp.error_code = GroupError(lr.status);
  if (call.header.api_version >= 3) {
    for (size_t i = 0; i < members.size(); ++i) {
      resp.members.push_back(kafka::LeaveGroupMemberResponse{
          members[i].member_id, Opt(members[i].instance_id),
          i < lr.members.size() ? GroupError(lr.members[i]) : ErrorCode::kUnknownMemberId});
    }
  } else if (resp.error_code == ErrorCode::kNone && !lr.members.empty()) {
    resp.error_code = GroupError(lr.members[0]);
  }
  Reply(call, resp);
}

void KafkaFrontDoor::OffsetCommit(const KafkaCall& call, Reader& r) {
  kafka::OffsetCommitRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  ClassicCommitRequest cr;
  cr.group = std::string(req.group_id);
  cr.generation_id = req.generation_id;
  cr.member_id = std::string(req.member_id);
  cr.instance_id = Str(req.group_instance_id);
  // Read on the group, and on each topic: the partitions of a topic the client may not read are
  // refused and left out of the commit.
  const ErrorCode gate = GroupGate(call, AclOperation::kRead, req.group_id);
  const bool group_ok = gate == ErrorCode::kNone;
  std::vector<bool> topic_ok;
  for (const auto& t : req.topics) {
    topic_ok.push_back(MayTopic(call, AclOperation::kRead, t.name));
    if (!group_ok || !topic_ok.back()) continue;
    for (const auto& p : t.partitions) {
      cr.offsets.push_back({std::string(t.name), p.index, p.committed_offset, p.committed_leader_epoch,
                            Str(p.committed_metadata)});
    }
  }
  const ClassicCommitResponse res = group_ok ? d_.groups->CommitClassic(cr) : ClassicCommitResponse{};
  kafka::OffsetCommitResponse resp;
  size_t i = 0;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    kafka::OffsetCommitTopicResponse tr;
    tr.name = std::string(t.name);
    for (const auto& p : t.partitions) {
      kafka::OffsetCommitPartitionResponse pr;
      pr.index = p.index;
      if (!group_ok) {
        pr.error_code = gate;
        tr.partitions.push_back(pr);
        continue;
      }
      if (!topic_ok[ti]) {
        pr.error_code = ErrorCode::kTopicAuthorizationFailed;
        tr.partitions.push_back(pr);
        continue;
      }
      if (!res.status.ok()) {
        pr.error_code = GroupError(res.status);
      } else if (i < res.partitions.size()) {
        pr.error_code = GroupError(res.partitions[i]);
      }
      ++i;
      tr.partitions.push_back(pr);
    }
    resp.topics.push_back(std::move(tr));
  }
  Reply(call, resp);
}

void KafkaFrontDoor::OffsetFetch(const KafkaCall& call, Reader& r) {
  kafka::OffsetFetchRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::OffsetFetchResponse resp;
  const std::string g(req.group_id);
  if (Status s = metadata::ValidateGroupId(g); !s.ok()) {
    resp.error_code = ErrorCode::kInvalidGroupId;
    Reply(call, resp);
    return;
  }
  if (const ErrorCode gate = GroupGate(call, AclOperation::kDescribe, g); gate != ErrorCode::kNone) {
    resp.error_code = gate;
    Reply(call, resp);
    return;
  }
  const auto committed = d_.groups->offsets().FetchGroup(g);
  if (!committed.ok()) {  // the store cannot be read now (a cluster's ZooKeeper away)
    resp.error_code = ErrorCode::kCoordinatorNotAvailable;
    Reply(call, resp);
    return;
  }
  auto fill = [](kafka::OffsetFetchPartitionResponse& pr, const std::optional<metadata::CommittedOffset>& c) {
    if (!c) return;
    pr.committed_offset = c->offset;
    pr.committed_leader_epoch = c->leader_epoch;
    pr.metadata = c->metadata;
  };
  if (req.topics) {
    for (const auto& t : *req.topics) {
      kafka::OffsetFetchTopicResponse tr;
      tr.name = std::string(t.name);
      const bool may = MayTopic(call, AclOperation::kDescribe, t.name);
      for (int32_t p : t.partitions) {
        kafka::OffsetFetchPartitionResponse pr;
        pr.index = p;
        pr.metadata = "";
        if (!may) {
          pr.error_code = ErrorCode::kTopicAuthorizationFailed;
          tr.partitions.push_back(std::move(pr));
          continue;
        }
        const auto it = committed->find({tr.name, p});
        fill(pr, it == committed->end() ? std::nullopt : std::optional(it->second));
        tr.partitions.push_back(std::move(pr));
      }
      resp.topics.push_back(std::move(tr));
    }
  } else {
    for (const auto& [key, c] : *committed) {
      if (!MayTopic(call, AclOperation::kDescribe, key.first)) continue;
      if (resp.topics.empty() || resp.topics.back().name != key.first) resp.topics.push_back({key.first, {}});
      kafka::OffsetFetchPartitionResponse pr;
      pr.index = key.second;
      fill(pr, c);
      resp.topics.back().partitions.push_back(std::move(pr));
    }
  }
  Reply(call, resp);
}

void KafkaFrontDoor::ListGroups(const KafkaCall& call, Reader& r) {
  kafka::ListGroupsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::ListGroupsResponse resp;
  for (const auto& g : d_.groups->Overview()) {
    if (MayGroup(call, AclOperation::kDescribe, g.group)) resp.groups.push_back({g.group, g.protocol_type});
  }
  Reply(call, resp);
}

void KafkaFrontDoor::DescribeGroups(const KafkaCall& call, Reader& r) {
  kafka::DescribeGroupsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::DescribeGroupsResponse resp;
  auto keep = std::make_shared<std::vector<group::ClassicGroupDescription>>();
  keep->reserve(req.groups.size());
  for (const std::string_view id : req.groups) {
    const std::string g(id);
    kafka::DescribedGroup out;
    out.group_id = g;
    if (Status s = metadata::ValidateGroupId(g); !s.ok()) {
      out.error_code = ErrorCode::kInvalidGroupId;
      resp.groups.push_back(std::move(out));
      continue;
    }
    if (const ErrorCode gate = GroupGate(call, AclOperation::kDescribe, g); gate != ErrorCode::kNone) {
      out.error_code = gate;
      resp.groups.push_back(std::move(out));
      continue;
    }
    const group::ClassicGroupDescription& d = keep->emplace_back(d_.groups->DescribeClassic(g));
    out.group_state = std::string(group::ClassicStateName(d.state));
    out.protocol_type = d.protocol_type;
    out.protocol_data = d.protocol_name;
    for (const auto& m : d.members) {
      out.members.push_back(kafka::DescribedGroupMember{m.member_id, Opt(m.instance_id), m.client_id,
                                                        m.client_host, Bytes(m.metadata),
                                                        Bytes(m.assignment)});
    }
    resp.groups.push_back(std::move(out));
  }
  Reply(call, resp, keep);
}

void KafkaFrontDoor::DeleteGroups(const KafkaCall& call, Reader& r) {
  kafka::DeleteGroupsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::DeleteGroupsResponse resp;
  for (const std::string_view id : req.group_names) {
    kafka::DeleteGroupsGroupResponse out;
    out.group_id = std::string(id);
    out.error_code = MayGroup(call, AclOperation::kDelete, id) ? GroupError(d_.groups->Delete(out.group_id))
                                                               : ErrorCode::kGroupAuthorizationFailed;
    resp.results.push_back(std::move(out));
  }
  Reply(call, resp);
}

}  // namespace rdmq::broker::internal
