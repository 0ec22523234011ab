// LeaderEpochs: which leader epoch wrote which part of a partition's log (Kafka's leader epoch
// cache, KIP-101 and KIP-279), and the truncation point of a follower that meets a new leader
// (docs/replication.md, "Failover"). A leader stamps its epoch into every batch it appends (the
// batch header's partitionLeaderEpoch, which the batch CRC does not cover), so the cache is
// rebuilt from the batch headers when a log is opened and kept as batches arrive.
//
// Threading: a value; not thread-safe (its owner's lock guards it).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"

namespace rdmq::cluster {

class LeaderEpochs {
 public:
  struct Entry {
    int32_t epoch = 0;
    Offset start{0};  // the first offset this epoch wrote
    bool operator==(const Entry&) const = default;
  };

  // A batch of `epoch` starting at `base` (in log order). A new, higher epoch starts an entry;
  // the current one changes nothing; a lower one is a batch out of order (kInvalidArgument,
  // nothing changed). A negative epoch (a batch no leader stamped) is ignored.
  Status Observe(int32_t epoch, Offset base);

  // The latest epoch (-1 when nothing is known).
  int32_t latest() const { return entries_.empty() ? -1 : entries_.back().epoch; }
  const std::vector<Entry>& entries() const { return entries_; }

  // A leader's answer to a follower whose latest epoch is `epoch` (KIP-279's OffsetsForLeaderEpoch):
  // the largest epoch it knows that is not above `epoch`, and where that epoch's records end in
  // this log (the start of the next epoch, or `log_end` for the latest). nullopt when every epoch
  // it knows is above `epoch` (the follower must truncate everything after the log start).
  std::optional<std::pair<int32_t, Offset>> EndOf(int32_t epoch, Offset log_end) const;

  // The log was cut back to `end`: entries starting at or after it go.
  void TruncateTo(Offset end);
  // The log lost everything below `start` (retention): the entries ending before it go, the one
  // spanning it starts at it.
  void ClearBelow(Offset start);

 private:
  std::vector<Entry> entries_;  // by epoch and start, both increasing
};

// Where a follower must cut its log before following a leader (KIP-279), found in rounds: the
// follower asks the leader about its latest epoch (LeaderEpochs::EndOf on the leader's side:
// nullopt when the leader knows no epoch that old) and feeds the answer here. The follower keeps
// what both logs share: up to the end of the last epoch both have, never past its own end; with
// no answer, back to `follower_start`. When the leader answers an epoch the follower never had,
// the logs may diverge earlier than the follower can tell: it asks again, about its own largest
// epoch below that one.
struct TruncationStep {
  bool done = false;
  Offset truncate_to{0};  // when done
  int32_t ask = -1;       // else: the epoch to ask the leader about next
};
// The first question: the follower's latest epoch (-1: it knows none, so it keeps its log).
inline int32_t FirstQuestion(const LeaderEpochs& follower) { return follower.latest(); }
TruncationStep Truncation(const LeaderEpochs& follower, Offset follower_end, Offset follower_start,
                          const std::optional<std::pair<int32_t, Offset>>& leader_answer);

// The same rounds run where both caches are at hand: a leader that got the follower's cache
// (OpenReplica's answer) finds the follower's truncation point itself, answering each question
// from its own cache (`leader`, log end `leader_end`), with no round trip per round. `rounds`,
// when given, says how many questions it took.
Offset FollowerTruncationPoint(const LeaderEpochs& follower, Offset follower_end, Offset follower_start,
                               const LeaderEpochs& leader, Offset leader_end, int* rounds = nullptr);

}  // namespace rdmq::cluster
