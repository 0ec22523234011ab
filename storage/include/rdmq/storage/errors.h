// Error codes of the storage engine (category "storage"), mapped onto the generic rdmq::Errc
// conditions. Every Status carrying one of these also carries a context string naming the file,
// segment, position or offset concerned, e.g.
//   "segment 00000000000000004096.seg position 8192: record batch CRC mismatch ..."
#pragma once

#include "rdmq/common/errors.h"

#define RDMQ_STORAGE_ERRORS(X)                                                                    \
  X(kBadMagic, kCorruption, "not an rdmq file (bad magic)")                                       \
  X(kBadVersion, kUnsupported, "unsupported format version")                                      \
  X(kCorruptHeader, kCorruption, "file header is corrupt (CRC mismatch or impossible field)")     \
  X(kTruncatedFile, kCorruption, "file is shorter than its header says")                          \
  X(kSegmentMismatch, kCorruption, "segment does not belong here (name, topic or partition)")     \
  X(kCorruptBatch, kCorruption, "record batch is corrupt")                                        \
  X(kMalformedBatch, kCorruption, "record batch is malformed")                                    \
  X(kUnsupportedBatch, kUnsupported, "record batch uses an unsupported feature")                  \
  X(kOffsetOutOfRange, kOutOfRange, "offset out of range")                                        \
  X(kPositionOutOfRange, kOutOfRange, "position out of range")                                    \
  X(kSegmentTooLarge, kNoSpace, "segment is larger than the device")                              \
  X(kNoSpace, kNoSpace, "not enough free space on the device")                                    \
  X(kSegmentSealed, kFailedPrecondition, "segment is sealed")                                     \
  X(kSegmentFull, kResourceExhausted, "segment is full; retry on the next segment")               \
  X(kUnknownSegment, kNotFound, "no such segment")                                                \
  X(kOffsetMismatch, kInvalidArgument, "batch offsets do not continue the log")                   \
  X(kRangeConflict, kInvalidArgument, "range overlaps bytes already committed or pending")        \
  X(kReservationConflict, kFailedPrecondition, "shared-mode reservations are outstanding")        \
  X(kNotPmem, kUnsupported, "not persistent memory (not a DAX mapping)")                          \
  X(kLogFailed, kFailedPrecondition, "log stopped accepting writes after an earlier I/O failure") \
  X(kInvalidOptions, kInvalidArgument, "invalid storage options")                                 \
  X(kPowerLoss, kIoError, "simulated power loss (fault injection)")                               \
  X(kSlotBusy, kUnavailable, "partition slot is being updated; read it again")
RDMQ_DEFINE_ERRORS(rdmq::storage, StorageErrc, "storage", RDMQ_STORAGE_ERRORS)
