// The broker's RPC messages, field by field as docs/protocol.md specifies them. Each struct lists
// its fields once in Visit(); protocol::Encode / protocol::Decode (codec.h) do the rest.
// Descriptors are carried as opaque encoded fabric::RegionDescriptor bytes (Blob).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/errors.h"
#include "rdmq/common/types.h"
#include "rdmq/protocol/codec.h"

// Wire error codes: the enum values are the codes on the wire (docs/protocol.md, section 2).
#define RDMQ_WIRE_ERRORS(X)                                                         \
  X(kInvalidRequest, kInvalidArgument, "INVALID_REQUEST")                           \
  X(kUnknownTopic, kNotFound, "UNKNOWN_TOPIC")                                      \
  X(kUnknownPartition, kNotFound, "UNKNOWN_PARTITION")                              \
  X(kTopicExists, kAlreadyExists, "TOPIC_EXISTS")                                   \
  X(kInvalidConfig, kInvalidArgument, "INVALID_CONFIG")                             \
  X(kInvalidTopicName, kInvalidArgument, "INVALID_TOPIC_NAME")                      \
  X(kOffsetOutOfRange, kOutOfRange, "OFFSET_OUT_OF_RANGE")                          \
  X(kLeaseExpired, kFailedPrecondition, "LEASE_EXPIRED")                            \
  X(kStaleLocation, kFailedPrecondition, "STALE_LOCATION")                          \
  X(kRecordTooLarge, kInvalidArgument, "RECORD_TOO_LARGE")                          \
  X(kCorruptMessage, kCorruption, "CORRUPT_MESSAGE")                                \
  X(kOutOfCredit, kResourceExhausted, "OUT_OF_CREDIT")                              \
  X(kPartitionBusy, kFailedPrecondition, "PARTITION_BUSY")                          \
  X(kDuplicateSequence, kAlreadyExists, "DUPLICATE_SEQUENCE")                       \
  X(kOutOfOrderSequence, kFailedPrecondition, "OUT_OF_ORDER_SEQUENCE")              \
  X(kInvalidProducerEpoch, kFailedPrecondition, "INVALID_PRODUCER_EPOCH")           \
  X(kUnavailable, kUnavailable, "UNAVAILABLE")                                      \
  X(kStorageError, kIoError, "STORAGE_ERROR")                                       \
  X(kNotSupported, kUnsupported, "NOT_SUPPORTED")                                   \
  X(kInternal, kInternal, "INTERNAL")                                               \
  X(kInvalidGroupId, kInvalidArgument, "INVALID_GROUP_ID")                          \
  X(kUnknownGroup, kNotFound, "UNKNOWN_GROUP")                                      \
  X(kGroupNotEmpty, kFailedPrecondition, "GROUP_NOT_EMPTY")                         \
  X(kUnknownMemberId, kFailedPrecondition, "UNKNOWN_MEMBER_ID")                     \
  X(kFencedMemberEpoch, kFailedPrecondition, "FENCED_MEMBER_EPOCH")                 \
  X(kStaleMemberEpoch, kFailedPrecondition, "STALE_MEMBER_EPOCH")                   \
  X(kInconsistentAssignor, kInvalidArgument, "INCONSISTENT_ASSIGNOR")               \
  X(kGroupMaxSizeReached, kResourceExhausted, "GROUP_MAX_SIZE_REACHED")             \
  X(kInconsistentGroupProtocol, kFailedPrecondition, "INCONSISTENT_GROUP_PROTOCOL") \
  X(kInvalidUser, kInvalidArgument, "INVALID_USER")                                 \
  X(kUserExists, kAlreadyExists, "USER_EXISTS")                                     \
  X(kUnknownUser, kNotFound, "UNKNOWN_USER")                                        \
  X(kAuthenticationFailed, kPermissionDenied, "AUTHENTICATION_FAILED")              \
  X(kAuthenticationRequired, kPermissionDenied, "AUTHENTICATION_REQUIRED")          \
  X(kTopicAuthorizationFailed, kPermissionDenied, "TOPIC_AUTHORIZATION_FAILED")     \
  X(kGroupAuthorizationFailed, kPermissionDenied, "GROUP_AUTHORIZATION_FAILED")     \
  X(kClusterAuthorizationFailed, kPermissionDenied, "CLUSTER_AUTHORIZATION_FAILED") \
  X(kInvalidAcl, kInvalidArgument, "INVALID_ACL")                                   \
  X(kNotLeader, kFailedPrecondition, "NOT_LEADER")                                  \
  X(kNotEnoughReplicas, kFailedPrecondition, "NOT_ENOUGH_REPLICAS")                 \
  X(kNotCoordinator, kFailedPrecondition, "NOT_COORDINATOR")                        \
  X(kFencedLeaderEpoch, kFailedPrecondition, "FENCED_LEADER_EPOCH")                 \
  X(kUnknownLeaderEpoch, kFailedPrecondition, "UNKNOWN_LEADER_EPOCH")               \
  X(kReassignmentInProgress, kFailedPrecondition, "REASSIGNMENT_IN_PROGRESS")
RDMQ_DEFINE_ERRORS(rdmq::protocol, WireError, "rdmq", RDMQ_WIRE_ERRORS)

namespace rdmq::protocol {

inline constexpr uint16_t kProtocolVersion = 1;

// RPC handler ids.
enum class Api : uint16_t {
  kHello = 1,
  kSaslAuthenticate = 2,
  kCreateTopic = 10,
  kDeleteTopic = 11,
  kDescribeTopic = 12,
  kListTopics = 13,
  kAlterTopic = 14,
  kDescribeCluster = 15,
  kReassignPartition = 16,
  kInitProducerId = 20,
  kOpenProduce = 21,
  kRenewLease = 22,
  kReleaseLease = 23,
  kCommit = 24,
  kOpenConsume = 30,
  kGetSegment = 31,
  kListOffsets = 32,
  kWatch = 33,
  kGroupHeartbeat = 40,  // group_messages.h
  kOffsetCommit = 41,
  kOffsetFetch = 42,
  kListGroups = 43,
  kDescribeGroup = 44,
  kDeleteGroup = 45,
  kFindCoordinator = 46,
  kOpenReplica = 47,  // replica_messages.h
  kReplicaCommit = 48,
  kReplicaTruncate = 49,
  kCreateUser = 50,  // user_messages.h
  kAlterUser = 51,
  kDeleteUser = 52,
  kListUsers = 53,
  kCreateAcls = 60,  // acl_messages.h
  kDeleteAcls = 61,
  kListAcls = 62,
};
std::string_view ApiName(Api api) noexcept;

struct ResponseHeader {
  uint16_t error = 0;
  std::string message;
  template <class V>
  void Visit(V& v) {
    v(error);
    v(message);
  }
};

struct ConfigEntry {
  std::string key;
  std::string value;
  template <class V>
  void Visit(V& v) {
    v(key);
    v(value);
  }
  bool operator==(const ConfigEntry&) const = default;
};

struct Empty {
  template <class V>
  void Visit(V&) {}
};

// --- Hello ---------------------------------------------------------------------------------
struct HelloRequest {
  std::string client_name;
  uint16_t protocol_version = kProtocolVersion;
  template <class V>
  void Visit(V& v) {
    v(client_name);
    v(protocol_version);
  }
};
struct HelloResponse {
  uint64_t client_id = 0;
  uint64_t broker_id = 0;
  std::string data_address;
  uint8_t provider = 0;
  uint32_t lease_ms = 0;
  uint32_t max_message_bytes = 0;
  // The SASL mechanisms a client must log in with (SaslAuthenticate) before any other request;
  // empty: the broker asks for no login.
  std::vector<std::string> sasl_mechanisms;
  uint64_t data_token = 0;  // the data endpoint handshake's proof of owning this session
  template <class V>
  void Visit(V& v) {
    v(client_id);
    v(broker_id);
    v(data_address);
    v(provider);
    v(lease_ms);
    v(max_message_bytes);
    v(sasl_mechanisms);
    v(data_token);
  }
};

// --- SaslAuthenticate: one step of a SCRAM login (RFC 5802) ----------------------------------
// The first request names the mechanism and carries client-first; the second carries
// client-final. The response carries the server's message (server-first, then server-final).
struct SaslAuthenticateRequest {
  std::string mechanism;
  std::string token;
  template <class V>
  void Visit(V& v) {
    v(mechanism);
    v(token);
  }
};
struct SaslAuthenticateResponse {
  std::string token;
  template <class V>
  void Visit(V& v) {
    v(token);
  }
};

// --- Topics --------------------------------------------------------------------------------
struct TopicInfo {
  std::string name;
  TopicId id{0};
  TimestampMs created_ms{0};
  std::vector<ConfigEntry> configs;
  template <class V>
  void Visit(V& v) {
    v(name);
    v(id);
    v(created_ms);
    v(configs);
  }
};
// One partition. The log's numbers are those of the answering broker's replica, and only when it
// holds one (`local`); leadership is the cluster's (a single broker: itself, epoch 0).
struct PartitionInfo {
  PartitionId partition{0};
  Offset log_start_offset{0};
  Offset high_watermark{0};
  uint32_t segments = 0;
  uint64_t bytes = 0;
  Offset active_segment_base{0};
  uint8_t exclusive_lease = 0;
  int32_t leader = -1;  // broker id; -1: none (no in-sync replica is alive)
  int32_t leader_epoch = 0;
  std::vector<int32_t> replicas;  // in preference order
  std::vector<int32_t> isr;       // in-sync replicas
  uint8_t local = 0;              // 1: the answering broker holds a replica (the log's numbers are its)
  template <class V>
  void Visit(V& v) {
    v(partition);
    v(log_start_offset);
    v(high_watermark);
    v(segments);
    v(bytes);
    v(active_segment_base);
    v(exclusive_lease);
    v(leader);
    v(leader_epoch);
    v(replicas);
    v(isr);
    v(local);
  }
};
struct CreateTopicRequest {
  std::string name;
  std::vector<ConfigEntry> configs;
  template <class V>
  void Visit(V& v) {
    v(name);
    v(configs);
  }
};
using AlterTopicRequest = CreateTopicRequest;

// ReassignPartition: the partition's replicas are to become `replicas` (broker ids, the first
// the preferred leader). Answered once the move started (Empty); the controller completes it.
struct ReassignPartitionRequest {
  std::string topic;
  PartitionId partition{0};
  std::vector<int32_t> replicas;
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
    v(replicas);
  }
};
struct TopicNameRequest {  // DeleteTopic, DescribeTopic
  std::string name;
  template <class V>
  void Visit(V& v) {
    v(name);
  }
};
struct TopicResponse {  // CreateTopic, AlterTopic
  TopicInfo topic;
  template <class V>
  void Visit(V& v) {
    v(topic);
  }
};
struct DescribeTopicResponse {
  TopicInfo topic;
  std::vector<PartitionInfo> partitions;
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partitions);
  }
};
struct ListTopicsResponse {
  std::vector<TopicInfo> topics;
  template <class V>
  void Visit(V& v) {
    v(topics);
  }
};

// --- DescribeCluster (15): request empty -----------------------------------------------------
struct BrokerEntry {
  int32_t id = 0;
  std::string control;  // its RPC control address
  std::string data;
  std::string kafka;  // advertised host:port, "" when its Kafka listener is off
  template <class V>
  void Visit(V& v) {
    v(id);
    v(control);
    v(data);
    v(kafka);
  }
};
struct DescribeClusterResponse {
  uint8_t clustered = 0;  // 1: a cluster on ZooKeeper; 0: one broker on its own
  int32_t controller = -1;
  int32_t controller_epoch = 0;
  int32_t this_broker = 0;
  std::vector<BrokerEntry> brokers;  // the live ones, by id
  std::string zookeeper;             // the connect string, "" when not clustered
  template <class V>
  void Visit(V& v) {
    v(clustered);
    v(controller);
    v(controller_epoch);
    v(this_broker);
    v(brokers);
    v(zookeeper);
  }
};

// --- Producing -----------------------------------------------------------------------------
struct InitProducerIdResponse {
  ProducerId producer_id = kNoProducerId;
  int16_t producer_epoch = 0;
  template <class V>
  void Visit(V& v) {
    v(producer_id);
    v(producer_epoch);
  }
};

enum class ProduceMode : uint8_t { kExclusive = 1, kShared = 2 };
// When a lease's commits are acknowledged: once the leader committed them (acks=1), or once every
// in-sync replica holds them, the high watermark (acks=all).
enum class AckLevel : uint8_t { kLeader = 1, kInSync = 2 };

struct SegmentLocation {
  Offset base_offset{0};
  // Encoded fabric::RegionDescriptor: the whole segment file (consumers, shared producers), or
  // for an exclusive producer a window of the data area starting at `region_position`.
  Blob region;
  uint64_t data_offset = 0;         // region offset of data-area position `region_position`
  uint64_t capacity = 0;            // data-area bytes
  uint64_t reservation_offset = 0;  // region offset of the reservation word (whole-file regions)
  Position region_position{0};      // data-area position the region's data starts at (0: all)
  // The region offset of data-area position p (p >= region_position).
  uint64_t RemoteOffset(Position p) const { return data_offset + (p - region_position); }
  template <class V>
  void Visit(V& v) {
    v(base_offset);
    v(region);
    v(data_offset);
    v(capacity);
    v(reservation_offset);
    v(region_position);
  }
};

struct OpenProduceRequest {
  std::string topic;
  PartitionId partition{0};
  ProduceMode mode = ProduceMode::kExclusive;
  ProducerId producer_id = kNoProducerId;
  int16_t producer_epoch = 0;
  Blob ack_region;
  AckLevel acks = AckLevel::kLeader;
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
    v(mode);
    v(producer_id);
    v(producer_epoch);
    v(ack_region);
    v(acks);
  }
};
struct LeaseResponse {  // OpenProduce, RenewLease
  LeaseId lease_id{0};
  uint32_t lease_index = 0;
  uint32_t lease_ms = 0;
  SegmentLocation segment;
  Position write_position{0};
  Position credit_end{0};
  Offset next_offset{0};
  int32_t last_sequence = -1;
  Blob slot;
  uint32_t idle_ms = 0;  // the broker releases the lease after this long without a commit (0: never)
  template <class V>
  void Visit(V& v) {
    v(lease_id);
    v(lease_index);
    v(lease_ms);
    v(segment);
    v(write_position);
    v(credit_end);
    v(next_offset);
    v(last_sequence);
    v(slot);
    v(idle_ms);
  }
};
// RenewLease flags. kRenewRoll: the exclusive producer's next batch does not fit the segment;
// seal it at the committed end and move the lease to a new segment. kRenewActive: the producer
// is about to write after a pause; the lease counts as active (lease.idle.ms) from now.
inline constexpr uint32_t kRenewRoll = 1u << 0;
inline constexpr uint32_t kRenewActive = 1u << 1;
struct LeaseRequest {  // RenewLease, ReleaseLease
  LeaseId lease_id{0};
  uint32_t flags = 0;
  template <class V>
  void Visit(V& v) {
    v(lease_id);
    v(flags);
  }
};
struct CommitRequest {
  LeaseId lease_id{0};
  Offset segment_base{0};
  Position position{0};
  uint32_t length = 0;
  Offset next_offset = kNoOffset;
  template <class V>
  void Visit(V& v) {
    v(lease_id);
    v(segment_base);
    v(position);
    v(length);
    v(next_offset);
  }
};
inline constexpr uint32_t kCommitFlagSegmentFull = 1u << 0;
struct CommitResponse {
  Offset base_offset = kNoOffset;
  Position committed_position{0};
  Offset high_watermark{0};
  Position credit_end{0};
  uint32_t flags = 0;
  template <class V>
  void Visit(V& v) {
    v(base_offset);
    v(committed_position);
    v(high_watermark);
    v(credit_end);
    v(flags);
  }
};

// --- Consuming -----------------------------------------------------------------------------
struct PartitionRequest {  // OpenConsume
  std::string topic;
  PartitionId partition{0};
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
  }
};
struct OpenConsumeResponse {
  Blob slot;
  Offset log_start_offset{0};
  Offset high_watermark{0};
  std::vector<SegmentLocation> segments;
  template <class V>
  void Visit(V& v) {
    v(slot);
    v(log_start_offset);
    v(high_watermark);
    v(segments);
  }
};
struct GetSegmentRequest {
  std::string topic;
  PartitionId partition{0};
  Offset base_offset{0};
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
    v(base_offset);
  }
};
struct GetSegmentResponse {
  SegmentLocation segment;
  template <class V>
  void Visit(V& v) {
    v(segment);
  }
};
inline constexpr int64_t kListEarliest = -2;
inline constexpr int64_t kListLatest = -1;
inline constexpr int64_t kListOffset = -3;
struct ListOffsetsRequest {
  std::string topic;
  PartitionId partition{0};
  int64_t spec = kListEarliest;
  Offset offset{0};
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
    v(spec);
    v(offset);
  }
};
struct ListOffsetsResponse {
  Offset offset{0};
  Offset segment_base{0};
  Position position{0};
  Offset high_watermark{0};
  template <class V>
  void Visit(V& v) {
    v(offset);
    v(segment_base);
    v(position);
    v(high_watermark);
  }
};
struct WatchRequest {
  std::string topic;
  PartitionId partition{0};
  uint64_t generation = 0;
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
    v(generation);
  }
};
struct WatchResponse {
  uint64_t generation = 0;
  template <class V>
  void Visit(V& v) {
    v(generation);
  }
};

// --- Responses with their header -----------------------------------------------------------

// An OK response: header (error 0) then the body.
template <class M>
std::string EncodeOk(const M& body) {
  std::string out;
  EncodeTo(ResponseHeader{}, &out);
  EncodeTo(body, &out);
  return out;
}
// An error response: the header alone.
std::string EncodeError(WireError error, std::string_view message);
// The wire error that best describes a Status from any module (exact codes first, then the
// generic condition), and the message to send with it.
WireError ToWireError(const Status& status);
std::string EncodeError(const Status& status);

// Decodes a response: the body when the header says OK; otherwise a Status carrying the wire
// error and the broker's message.
template <class M>
Result<M> DecodeResponse(std::span<const std::byte> bytes) {
  coding::Reader r(bytes);
  ResponseHeader h;
  RDMQ_RETURN_IF_ERROR(DecodeFrom(&r, &h));
  if (h.error != 0) return Status(static_cast<WireError>(h.error), std::move(h.message));
  M m{};
  RDMQ_RETURN_IF_ERROR(DecodeFrom(&r, &m));
  if (r.remaining() != 0) return Status(CodecErrc::kMalformed, "trailing bytes after response");
  return m;
}

}  // namespace rdmq::protocol
