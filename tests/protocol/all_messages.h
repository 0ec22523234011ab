// Every request and response type, for tests and the fuzzer that must cover them all.
#pragma once

#include "rdmq/protocol/acl_messages.h"
#include "rdmq/protocol/group_messages.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/protocol/replica_messages.h"
#include "rdmq/protocol/user_messages.h"

namespace rdmq::protocol::testing {

template <class F>
void ForEachMessageType(F&& f) {
  f.template operator()<HelloRequest>();
  f.template operator()<HelloResponse>();
  f.template operator()<SaslAuthenticateRequest>();
  f.template operator()<SaslAuthenticateResponse>();
  f.template operator()<TopicInfo>();
  f.template operator()<PartitionInfo>();
  f.template operator()<CreateTopicRequest>();
  f.template operator()<TopicNameRequest>();
  f.template operator()<TopicResponse>();
  f.template operator()<DescribeTopicResponse>();
  f.template operator()<ListTopicsResponse>();
  f.template operator()<BrokerEntry>();
  f.template operator()<DescribeClusterResponse>();
  f.template operator()<ReassignPartitionRequest>();
  f.template operator()<InitProducerIdResponse>();
  f.template operator()<OpenProduceRequest>();
  f.template operator()<LeaseResponse>();
  f.template operator()<LeaseRequest>();
  f.template operator()<CommitRequest>();
  f.template operator()<CommitResponse>();
  f.template operator()<PartitionRequest>();
  f.template operator()<OpenConsumeResponse>();
  f.template operator()<GetSegmentRequest>();
  f.template operator()<GetSegmentResponse>();
  f.template operator()<ListOffsetsRequest>();
  f.template operator()<ListOffsetsResponse>();
  f.template operator()<WatchRequest>();
  f.template operator()<WatchResponse>();
  f.template operator()<GroupHeartbeatRequest>();
  f.template operator()<GroupHeartbeatResponse>();
  f.template operator()<OffsetCommitRequest>();
  f.template operator()<OffsetFetchRequest>();
  f.template operator()<OffsetFetchResponse>();
  f.template operator()<ListGroupsResponse>();
  f.template operator()<GroupRequest>();
  f.template operator()<DescribeGroupResponse>();
  f.template operator()<FindCoordinatorResponse>();
  f.template operator()<EpochEntry>();
  f.template operator()<OpenReplicaRequest>();
  f.template operator()<OpenReplicaResponse>();
  f.template operator()<ReplicaCommitRequest>();
  f.template operator()<ReplicaTruncateRequest>();
  f.template operator()<ScramSecretEntry>();
  f.template operator()<UserRequest>();
  f.template operator()<UserNameRequest>();
  f.template operator()<UserListing>();
  f.template operator()<ListUsersResponse>();
  f.template operator()<AclEntry>();
  f.template operator()<AclsRequest>();
  f.template operator()<AclsResponse>();
  f.template operator()<ListAclsResponse>();
}

}  // namespace rdmq::protocol::testing
