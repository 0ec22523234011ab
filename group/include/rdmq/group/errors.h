// The consumer-group coordinator's error codes (GroupErrc). Each maps onto a generic rdmq::Errc
// condition; the broker carries them to clients as wire errors (docs/groups.md, "Errors").
#pragma once

#include "rdmq/common/errors.h"

#define RDMQ_GROUP_ERRORS(X)                                                             \
  X(kUnknownMemberId, kNotFound, "unknown member id")                                    \
  X(kFencedMemberEpoch, kFailedPrecondition, "fenced member epoch: rejoin with epoch 0") \
  X(kStaleMemberEpoch, kFailedPrecondition, "stale member epoch")                        \
  X(kInconsistentAssignor, kFailedPrecondition, "the group uses another assignor")       \
  X(kUnsupportedAssignor, kInvalidArgument, "unsupported assignor")                      \
  X(kInvalidRegularExpression, kInvalidArgument, "invalid topic regular expression")     \
  X(kInvalidRequest, kInvalidArgument, "invalid group request")                          \
  X(kGroupMaxSizeReached, kResourceExhausted, "the group has reached its maximum number of members")
RDMQ_DEFINE_ERRORS(rdmq::group, GroupErrc, "group", RDMQ_GROUP_ERRORS)
