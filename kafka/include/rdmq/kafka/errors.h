// Kafka's error codes as they travel in responses (ErrorCode), and the codec's own failures
// (KafkaErrc, an rdmq error category usable in Status).
//
// ErrorCode values are Kafka's numeric codes (the int16 "error_code" fields of every response);
// the enumerators are the CamelCase form of Kafka's names, and ErrorName() gives the name Kafka
// itself prints ("UNKNOWN_TOPIC_OR_PARTITION"). docs/kafka-protocol.md lists which codes rdmq
// returns from which API.
//
// KafkaErrc codes are raised by the decoders (wire.h, frame.h, the message decoders) for bytes
// that cannot be a valid request; the Status context names the field and its byte offset
// ("partition.records at byte 41: needs 120 bytes, 7 left").
#pragma once

#include <cstdint>
#include <string_view>

#include "rdmq/common/errors.h"

// X(enumerator, code, Kafka's name). Every code a broker of this kind may return, and those a
// client may show when it decodes ours.
#define RDMQ_KAFKA_ERROR_CODES(X)                                                     \
  X(kUnknownServerError, -1, "UNKNOWN_SERVER_ERROR")                                  \
  X(kNone, 0, "NONE")                                                                 \
  X(kOffsetOutOfRange, 1, "OFFSET_OUT_OF_RANGE")                                      \
  X(kCorruptMessage, 2, "CORRUPT_MESSAGE")                                            \
  X(kUnknownTopicOrPartition, 3, "UNKNOWN_TOPIC_OR_PARTITION")                        \
  X(kInvalidFetchSize, 4, "INVALID_FETCH_SIZE")                                       \
  X(kLeaderNotAvailable, 5, "LEADER_NOT_AVAILABLE")                                   \
  X(kNotLeaderOrFollower, 6, "NOT_LEADER_OR_FOLLOWER")                                \
  X(kRequestTimedOut, 7, "REQUEST_TIMED_OUT")                                         \
  X(kBrokerNotAvailable, 8, "BROKER_NOT_AVAILABLE")                                   \
  X(kReplicaNotAvailable, 9, "REPLICA_NOT_AVAILABLE")                                 \
  X(kMessageTooLarge, 10, "MESSAGE_TOO_LARGE")                                        \
  X(kStaleControllerEpoch, 11, "STALE_CONTROLLER_EPOCH")                              \
  X(kOffsetMetadataTooLarge, 12, "OFFSET_METADATA_TOO_LARGE")                         \
  X(kNetworkException, 13, "NETWORK_EXCEPTION")                                       \
  X(kCoordinatorLoadInProgress, 14, "COORDINATOR_LOAD_IN_PROGRESS")                   \
  X(kCoordinatorNotAvailable, 15, "COORDINATOR_NOT_AVAILABLE")                        \
  X(kNotCoordinator, 16, "NOT_COORDINATOR")                                           \
  X(kInvalidTopicException, 17, "INVALID_TOPIC_EXCEPTION")                            \
  X(kRecordListTooLarge, 18, "RECORD_LIST_TOO_LARGE")                                 \
  X(kNotEnoughReplicas, 19, "NOT_ENOUGH_REPLICAS")                                    \
  X(kNotEnoughReplicasAfterAppend, 20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")            \
  X(kInvalidRequiredAcks, 21, "INVALID_REQUIRED_ACKS")                                \
  X(kIllegalGeneration, 22, "ILLEGAL_GENERATION")                                     \
  X(kInconsistentGroupProtocol, 23, "INCONSISTENT_GROUP_PROTOCOL")                    \
  X(kInvalidGroupId, 24, "INVALID_GROUP_ID")                                          \
  X(kUnknownMemberId, 25, "UNKNOWN_MEMBER_ID")                                        \
  X(kInvalidSessionTimeout, 26, "INVALID_SESSION_TIMEOUT")                            \
  X(kRebalanceInProgress, 27, "REBALANCE_IN_PROGRESS")                                \
  X(kInvalidCommitOffsetSize, 28, "INVALID_COMMIT_OFFSET_SIZE")                       \
  X(kTopicAuthorizationFailed, 29, "TOPIC_AUTHORIZATION_FAILED")                      \
  X(kGroupAuthorizationFailed, 30, "GROUP_AUTHORIZATION_FAILED")                      \
  X(kClusterAuthorizationFailed, 31, "CLUSTER_AUTHORIZATION_FAILED")                  \
  X(kInvalidTimestamp, 32, "INVALID_TIMESTAMP")                                       \
  X(kUnsupportedSaslMechanism, 33, "UNSUPPORTED_SASL_MECHANISM")                      \
  X(kIllegalSaslState, 34, "ILLEGAL_SASL_STATE")                                      \
  X(kUnsupportedVersion, 35, "UNSUPPORTED_VERSION")                                   \
  X(kTopicAlreadyExists, 36, "TOPIC_ALREADY_EXISTS")                                  \
  X(kInvalidPartitions, 37, "INVALID_PARTITIONS")                                     \
  X(kInvalidReplicationFactor, 38, "INVALID_REPLICATION_FACTOR")                      \
  X(kInvalidReplicaAssignment, 39, "INVALID_REPLICA_ASSIGNMENT")                      \
  X(kInvalidConfig, 40, "INVALID_CONFIG")                                             \
  X(kNotController, 41, "NOT_CONTROLLER")                                             \
  X(kInvalidRequest, 42, "INVALID_REQUEST")                                           \
  X(kUnsupportedForMessageFormat, 43, "UNSUPPORTED_FOR_MESSAGE_FORMAT")               \
  X(kPolicyViolation, 44, "POLICY_VIOLATION")                                         \
  X(kOutOfOrderSequenceNumber, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER")                    \
  X(kDuplicateSequenceNumber, 46, "DUPLICATE_SEQUENCE_NUMBER")                        \
  X(kInvalidProducerEpoch, 47, "INVALID_PRODUCER_EPOCH")                              \
  X(kInvalidTxnState, 48, "INVALID_TXN_STATE")                                        \
  X(kInvalidProducerIdMapping, 49, "INVALID_PRODUCER_ID_MAPPING")                     \
  X(kInvalidTransactionTimeout, 50, "INVALID_TRANSACTION_TIMEOUT")                    \
  X(kConcurrentTransactions, 51, "CONCURRENT_TRANSACTIONS")                           \
  X(kTransactionCoordinatorFenced, 52, "TRANSACTION_COORDINATOR_FENCED")              \
  X(kTransactionalIdAuthorizationFailed, 53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED") \
  X(kSecurityDisabled, 54, "SECURITY_DISABLED")                                       \
  X(kOperationNotAttempted, 55, "OPERATION_NOT_ATTEMPTED")                            \
  X(kKafkaStorageError, 56, "KAFKA_STORAGE_ERROR")                                    \
  X(kLogDirNotFound, 57, "LOG_DIR_NOT_FOUND")                                         \
  X(kSaslAuthenticationFailed, 58, "SASL_AUTHENTICATION_FAILED")                      \
  X(kUnknownProducerId, 59, "UNKNOWN_PRODUCER_ID")                                    \
  X(kReassignmentInProgress, 60, "REASSIGNMENT_IN_PROGRESS")                          \
  X(kDelegationTokenAuthDisabled, 61, "DELEGATION_TOKEN_AUTH_DISABLED")               \
  X(kDelegationTokenNotFound, 62, "DELEGATION_TOKEN_NOT_FOUND")                       \
  X(kDelegationTokenOwnerMismatch, 63, "DELEGATION_TOKEN_OWNER_MISMATCH")             \
  X(kDelegationTokenRequestNotAllowed, 64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED")    \
  X(kDelegationTokenAuthorizationFailed, 65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED") \
  X(kDelegationTokenExpired, 66, "DELEGATION_TOKEN_EXPIRED")                          \
  X(kInvalidPrincipalType, 67, "INVALID_PRINCIPAL_TYPE")                              \
  X(kNonEmptyGroup, 68, "NON_EMPTY_GROUP")                                            \
  X(kGroupIdNotFound, 69, "GROUP_ID_NOT_FOUND")                                       \
  X(kFetchSessionIdNotFound, 70, "FETCH_SESSION_ID_NOT_FOUND")                        \
  X(kInvalidFetchSessionEpoch, 71, "INVALID_FETCH_SESSION_EPOCH")                     \
  X(kListenerNotFound, 72, "LISTENER_NOT_FOUND")                                      \
  X(kTopicDeletionDisabled, 73, "TOPIC_DELETION_DISABLED")                            \
  X(kFencedLeaderEpoch, 74, "FENCED_LEADER_EPOCH")                                    \
  X(kUnknownLeaderEpoch, 75, "UNKNOWN_LEADER_EPOCH")                                  \
  X(kUnsupportedCompressionType, 76, "UNSUPPORTED_COMPRESSION_TYPE")                  \
  X(kStaleBrokerEpoch, 77, "STALE_BROKER_EPOCH")                                      \
  X(kOffsetNotAvailable, 78, "OFFSET_NOT_AVAILABLE")                                  \
  X(kMemberIdRequired, 79, "MEMBER_ID_REQUIRED")                                      \
  X(kPreferredLeaderNotAvailable, 80, "PREFERRED_LEADER_NOT_AVAILABLE")               \
  X(kGroupMaxSizeReached, 81, "GROUP_MAX_SIZE_REACHED")                               \
  X(kFencedInstanceId, 82, "FENCED_INSTANCE_ID")                                      \
  X(kEligibleLeadersNotAvailable, 83, "ELIGIBLE_LEADERS_NOT_AVAILABLE")               \
  X(kElectionNotNeeded, 84, "ELECTION_NOT_NEEDED")                                    \
  X(kNoReassignmentInProgress, 85, "NO_REASSIGNMENT_IN_PROGRESS")                     \
  X(kGroupSubscribedToTopic, 86, "GROUP_SUBSCRIBED_TO_TOPIC")                         \
  X(kInvalidRecord, 87, "INVALID_RECORD")                                             \
  X(kUnstableOffsetCommit, 88, "UNSTABLE_OFFSET_COMMIT")                              \
  X(kThrottlingQuotaExceeded, 89, "THROTTLING_QUOTA_EXCEEDED")                        \
  X(kProducerFenced, 90, "PRODUCER_FENCED")                                           \
  X(kResourceNotFound, 91, "RESOURCE_NOT_FOUND")                                      \
  X(kDuplicateResource, 92, "DUPLICATE_RESOURCE")                                     \
  X(kUnacceptableCredential, 93, "UNACCEPTABLE_CREDENTIAL")                           \
  X(kInconsistentVoterSet, 94, "INCONSISTENT_VOTER_SET")                              \
  X(kInvalidUpdateVersion, 95, "INVALID_UPDATE_VERSION")                              \
  X(kFeatureUpdateFailed, 96, "FEATURE_UPDATE_FAILED")                                \
  X(kPrincipalDeserializationFailure, 97, "PRINCIPAL_DESERIALIZATION_FAILURE")

namespace rdmq::kafka {

#define RDMQ_KAFKA_ERROR_ENUM_(name, code, text) name = code,
// A Kafka error code as it appears on the wire. Any int16 may be held (a decoded response can
// carry a code this table does not know); ErrorName() then answers "UNKNOWN_ERROR_CODE".
enum class ErrorCode : int16_t { RDMQ_KAFKA_ERROR_CODES(RDMQ_KAFKA_ERROR_ENUM_) };
#undef RDMQ_KAFKA_ERROR_ENUM_

// Kafka's name of the code ("NONE", "NOT_COORDINATOR"), or "UNKNOWN_ERROR_CODE".
std::string_view ErrorName(ErrorCode code) noexcept;

}  // namespace rdmq::kafka

// The codec's failures: bytes that are not a valid Kafka request (or response) of the version
// they claim. The context of the Status names the field and the byte offset within the input the
// Reader was given.
#define RDMQ_KAFKA_CODEC_ERRORS(X)                                                  \
  X(kTruncated, kCorruption, "truncated: the field runs past the end of the input") \
  X(kBadLength, kCorruption, "invalid length or count")                             \
  X(kBadVarint, kCorruption, "malformed varint")                                    \
  X(kBadFrameSize, kCorruption, "frame size is zero or negative")                   \
  X(kFrameTooLarge, kResourceExhausted, "frame size above the limit")               \
  X(kUnsupportedVersion, kUnsupported, "unsupported api version")                   \
  X(kUnknownApi, kUnsupported, "api not implemented")                               \
  X(kTrailingBytes, kCorruption, "trailing bytes after the message")                \
  X(kMalformed, kCorruption, "malformed message")
RDMQ_DEFINE_ERRORS(rdmq::kafka, KafkaErrc, "kafka", RDMQ_KAFKA_CODEC_ERRORS)
