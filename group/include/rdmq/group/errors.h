// The consumer-group coordinator's error codes. GroupErrc: rdmq's own protocol (group.h), carried
// to clients as wire errors (docs/groups.md, "Errors"). ClassicErrc: Kafka's classic protocol
// (classic.h); each name is the Kafka error it stands for (kUnknownMemberId is Kafka's
// UNKNOWN_MEMBER_ID), so a Kafka listener maps them one to one onto Kafka's numbers. Each maps
// onto a generic rdmq::Errc condition.
#pragma once

#include "rdmq/common/errors.h"

#define RDMQ_GROUP_ERRORS(X)                                                                         \
  X(kUnknownMemberId, kNotFound, "unknown member id")                                                \
  X(kFencedMemberEpoch, kFailedPrecondition, "fenced member epoch: rejoin with epoch 0")             \
  X(kStaleMemberEpoch, kFailedPrecondition, "stale member epoch")                                    \
  X(kInconsistentAssignor, kFailedPrecondition, "the group uses another assignor")                   \
  X(kUnsupportedAssignor, kInvalidArgument, "unsupported assignor")                                  \
  X(kInvalidRegularExpression, kInvalidArgument, "invalid topic regular expression")                 \
  X(kInvalidRequest, kInvalidArgument, "invalid group request")                                      \
  X(kGroupMaxSizeReached, kResourceExhausted, "the group has reached its maximum number of members") \
  X(kMalformedConsumerProtocol, kCorruption, "malformed consumer protocol subscription or assignment")
RDMQ_DEFINE_ERRORS(rdmq::group, GroupErrc, "group", RDMQ_GROUP_ERRORS)

#define RDMQ_CLASSIC_GROUP_ERRORS(X)                                                               \
  X(kUnknownMemberId, kNotFound, "UNKNOWN_MEMBER_ID: the member id is not in the group")           \
  X(kIllegalGeneration, kFailedPrecondition, "ILLEGAL_GENERATION: not the group's generation")     \
  X(kRebalanceInProgress, kFailedPrecondition, "REBALANCE_IN_PROGRESS: rejoin the group")          \
  X(kInconsistentGroupProtocol, kFailedPrecondition,                                               \
    "INCONSISTENT_GROUP_PROTOCOL: the group's members use another protocol")                       \
  X(kInvalidSessionTimeout, kInvalidArgument,                                                      \
    "INVALID_SESSION_TIMEOUT: outside group.min/max.session.timeout.ms")                           \
  X(kMemberIdRequired, kFailedPrecondition, "MEMBER_ID_REQUIRED: rejoin with the member id given") \
  X(kFencedInstanceId, kFailedPrecondition,                                                        \
    "FENCED_INSTANCE_ID: another member took this group.instance.id")                              \
  X(kGroupMaxSizeReached, kResourceExhausted, "GROUP_MAX_SIZE_REACHED: the group is full")         \
  X(kCoordinatorNotAvailable, kUnavailable, "COORDINATOR_NOT_AVAILABLE")                           \
  X(kUnknownServerError, kInternal, "UNKNOWN_SERVER_ERROR")                                        \
  X(kInvalidGroupId, kInvalidArgument, "INVALID_GROUP_ID")                                         \
  X(kNotCoordinator, kUnavailable, "NOT_COORDINATOR")                                              \
  X(kGroupIdNotFound, kNotFound, "GROUP_ID_NOT_FOUND")                                             \
  X(kNonEmptyGroup, kFailedPrecondition, "NON_EMPTY_GROUP: the group has members")                 \
  X(kUnknownTopicOrPartition, kNotFound, "UNKNOWN_TOPIC_OR_PARTITION")                             \
  X(kOffsetMetadataTooLarge, kInvalidArgument, "OFFSET_METADATA_TOO_LARGE")
RDMQ_DEFINE_ERRORS(rdmq::group, ClassicErrc, "classic group", RDMQ_CLASSIC_GROUP_ERRORS)
