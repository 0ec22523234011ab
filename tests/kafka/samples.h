// A populated instance of every request and response type, every field set to a value other than
// its default (all fields, whatever the version: an encoder writes those of its version). Byte
// fields point at static storage. Used by the round-trip tests and the fuzz seed generator.
#pragma once

#include "rdmq/kafka/messages.h"

namespace rdmq::kafka::test {

#define RDMQ_KAFKA_DECLARE_FILL_(key, Req, Resp) \
  void Fill(Req* m);                             \
  void Fill(Resp* m);
RDMQ_KAFKA_DECLARE_FILL_(kProduce, ProduceRequest, ProduceResponse)
RDMQ_KAFKA_DECLARE_FILL_(kFetch, FetchRequest, FetchResponse)
RDMQ_KAFKA_DECLARE_FILL_(kListOffsets, ListOffsetsRequest, ListOffsetsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kMetadata, MetadataRequest, MetadataResponse)
RDMQ_KAFKA_DECLARE_FILL_(kOffsetCommit, OffsetCommitRequest, OffsetCommitResponse)
RDMQ_KAFKA_DECLARE_FILL_(kOffsetFetch, OffsetFetchRequest, OffsetFetchResponse)
RDMQ_KAFKA_DECLARE_FILL_(kFindCoordinator, FindCoordinatorRequest, FindCoordinatorResponse)
RDMQ_KAFKA_DECLARE_FILL_(kJoinGroup, JoinGroupRequest, JoinGroupResponse)
RDMQ_KAFKA_DECLARE_FILL_(kHeartbeat, HeartbeatRequest, HeartbeatResponse)
RDMQ_KAFKA_DECLARE_FILL_(kLeaveGroup, LeaveGroupRequest, LeaveGroupResponse)
RDMQ_KAFKA_DECLARE_FILL_(kSyncGroup, SyncGroupRequest, SyncGroupResponse)
RDMQ_KAFKA_DECLARE_FILL_(kDescribeGroups, DescribeGroupsRequest, DescribeGroupsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kListGroups, ListGroupsRequest, ListGroupsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kApiVersions, ApiVersionsRequest, ApiVersionsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kCreateTopics, CreateTopicsRequest, CreateTopicsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kDeleteTopics, DeleteTopicsRequest, DeleteTopicsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kInitProducerId, InitProducerIdRequest, InitProducerIdResponse)
RDMQ_KAFKA_DECLARE_FILL_(kDescribeConfigs, DescribeConfigsRequest, DescribeConfigsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kCreatePartitions, CreatePartitionsRequest, CreatePartitionsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kDeleteGroups, DeleteGroupsRequest, DeleteGroupsResponse)
RDMQ_KAFKA_DECLARE_FILL_(kSaslHandshake, SaslHandshakeRequest, SaslHandshakeResponse)
RDMQ_KAFKA_DECLARE_FILL_(kSaslAuthenticate, SaslAuthenticateRequest, SaslAuthenticateResponse)
#undef RDMQ_KAFKA_DECLARE_FILL_

template <class M>
M Sample() {
  M m;
  Fill(&m);
  return m;
}

}  // namespace rdmq::kafka::test
