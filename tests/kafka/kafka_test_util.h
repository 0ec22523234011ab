// Helpers for the Kafka codec tests: hand-written byte strings and the list of every api with its
// request and response types.
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/kafka/api.h"
#include "rdmq/kafka/messages.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka::test {

using Bytes = std::vector<std::byte>;

// Parses hex digits, ignoring spaces, so that golden messages can be written field by field:
//   Hex("0003"        // api_version
//       "0000002a")   // correlation_id
// A quoted 'text' segment stands for its ASCII bytes: Hex("0005 'hello'").
inline Bytes Hex(std::string_view s) {
  Bytes out;
  int hi = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'') {
      const size_t end = s.find('\'', i + 1);
      for (size_t j = i + 1; j < end; ++j) out.push_back(static_cast<std::byte>(s[j]));
      i = end;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
    if (hi < 0) {
      hi = d;
    } else {
      out.push_back(static_cast<std::byte>(hi * 16 + d));
      hi = -1;
    }
  }
  return out;
}

inline ByteSpan Span(std::string_view s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }
inline std::string Str(ByteSpan b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// Encodes m at version v and returns the bytes.
template <class M>
Bytes EncodeBytes(int16_t v, const M& m) {
  Writer w;
  Encode(w, v, m);
  return w.Flatten();
}

}  // namespace rdmq::kafka::test

// X(api key enumerator, request type, response type) for every supported api.
#define RDMQ_KAFKA_TEST_APIS(X)                                           \
  X(kProduce, ProduceRequest, ProduceResponse)                            \
  X(kFetch, FetchRequest, FetchResponse)                                  \
  X(kListOffsets, ListOffsetsRequest, ListOffsetsResponse)                \
  X(kMetadata, MetadataRequest, MetadataResponse)                         \
  X(kOffsetCommit, OffsetCommitRequest, OffsetCommitResponse)             \
  X(kOffsetFetch, OffsetFetchRequest, OffsetFetchResponse)                \
  X(kFindCoordinator, FindCoordinatorRequest, FindCoordinatorResponse)    \
  X(kJoinGroup, JoinGroupRequest, JoinGroupResponse)                      \
  X(kHeartbeat, HeartbeatRequest, HeartbeatResponse)                      \
  X(kLeaveGroup, LeaveGroupRequest, LeaveGroupResponse)                   \
  X(kSyncGroup, SyncGroupRequest, SyncGroupResponse)                      \
  X(kDescribeGroups, DescribeGroupsRequest, DescribeGroupsResponse)       \
  X(kListGroups, ListGroupsRequest, ListGroupsResponse)                   \
  X(kSaslHandshake, SaslHandshakeRequest, SaslHandshakeResponse)          \
  X(kApiVersions, ApiVersionsRequest, ApiVersionsResponse)                \
  X(kCreateTopics, CreateTopicsRequest, CreateTopicsResponse)             \
  X(kDeleteTopics, DeleteTopicsRequest, DeleteTopicsResponse)             \
  X(kInitProducerId, InitProducerIdRequest, InitProducerIdResponse)       \
  X(kDescribeConfigs, DescribeConfigsRequest, DescribeConfigsResponse)    \
  X(kSaslAuthenticate, SaslAuthenticateRequest, SaslAuthenticateResponse) \
  X(kCreatePartitions, CreatePartitionsRequest, CreatePartitionsResponse) \
  X(kDeleteGroups, DeleteGroupsRequest, DeleteGroupsResponse)
