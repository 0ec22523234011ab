// The replication RPCs a partition's leader sends to its followers (docs/protocol.md,
// "Replication"), field by field. Same conventions as messages.h: each struct lists its fields
// once in Visit().
//
// The leader is a writer of each follower's log, as an exclusive producer is of a leader's: it
// opens a replica lease (OpenReplica) and gets a write window on the follower's active segment,
// cuts the follower's log back to where the two agree (ReplicaTruncate), WRITEs its own committed
// batches verbatim into the window and commits them (ReplicaCommit). Every request carries the
// leader epoch it is sent under; a follower takes it only from the leader of the partition's
// current epoch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmq/common/types.h"
#include "rdmq/protocol/codec.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::protocol {

// One entry of a log's leader epoch cache: the first offset `epoch` wrote.
struct EpochEntry {
  int32_t epoch = 0;
  Offset start{0};
  template <class V>
  void Visit(V& v) {
    v(epoch);
    v(start);
  }
  bool operator==(const EpochEntry&) const = default;
};

// OpenReplica (47): the leader `leader_id` of `leader_epoch` asks for a replica lease.
struct OpenReplicaRequest {
  std::string topic;
  PartitionId partition{0};
  int32_t leader_id = -1;
  int32_t leader_epoch = -1;
  Blob ack_region;  // 64-byte ack block in the leader's memory, as OpenProduce's
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
    v(leader_id);
    v(leader_epoch);
    v(ack_region);
  }
};

// The follower's log as the leader needs it to decide where the two agree: its start, its end
// (lease.next_offset), what it exposed, and its epoch cache.
struct OpenReplicaResponse {
  LeaseResponse lease;  // the window starts at the follower's log end
  Offset log_start{0};
  Offset high_watermark{0};        // the follower's exposed end
  std::vector<EpochEntry> epochs;  // oldest first
  template <class V>
  void Visit(V& v) {
    v(lease);
    v(log_start);
    v(high_watermark);
    v(epochs);
  }
};

// ReplicaCommit (48): the range the leader wrote at `position` of segment `segment_base`, ending
// at offset `next_offset`, and the leader's high watermark for the follower to expose (up to
// what it holds). Response: CommitResponse, `base_offset` the range's first offset and
// `high_watermark` the follower's exposed end after the call. `length` 0 only passes the high
// watermark on.
struct ReplicaCommitRequest {
  LeaseId lease_id{0};
  int32_t leader_epoch = -1;
  Offset segment_base{0};
  Position position{0};
  uint32_t length = 0;
  Offset next_offset{kNoOffset};
  Offset high_watermark{0};
  template <class V>
  void Visit(V& v) {
    v(lease_id);
    v(leader_epoch);
    v(segment_base);
    v(position);
    v(length);
    v(next_offset);
    v(high_watermark);
  }
};

// ReplicaTruncate (49): cut the follower's log back to `end` (a batch boundary at or above its
// exposed end). Response: LeaseResponse, the lease's window moved to the new log end.
struct ReplicaTruncateRequest {
  LeaseId lease_id{0};
  int32_t leader_epoch = -1;
  Offset end{0};
  template <class V>
  void Visit(V& v) {
    v(lease_id);
    v(leader_epoch);
    v(end);
  }
};

}  // namespace rdmq::protocol
