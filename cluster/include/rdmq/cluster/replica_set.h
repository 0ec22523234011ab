// ReplicaSet: a partition leader's view of its followers, as a sans-I/O state machine
// (docs/replication.md, "Replication"). It is told what the leader's log holds and what each
// follower acknowledged holding durably, and the time; it answers the high watermark (what every
// in-sync replica holds: what readers may see and acks=all may acknowledge), whether an acks=all
// write may be taken (min.insync.replicas), and which ISR change to propose: a follower that has
// not caught up with the leader's log end within replica.lag.time.max.ms leaves the ISR; one that
// holds everything up to the high watermark again rejoins. No I/O, no clock, no lock: the caller
// passes `now`, writes the proposed ISR with compare-and-set (ClusterAgent::ChangeIsr) and tells
// it the result (SetIsr).
//
// Threading: a value; not thread-safe (the partition's lock guards it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "rdmq/cluster/model.h"
#include "rdmq/common/status.h"
#include "rdmq/common/types.h"

namespace rdmq::cluster {

struct ReplicaSetOptions {
  BrokerId leader = 0;
  std::vector<BrokerId> replicas;  // the leader among them
  std::vector<BrokerId> isr;       // the leader among them
  int32_t min_insync_replicas = 1;
  uint64_t lag_time_max_ns = 30'000'000'000;  // replica.lag.time.max.ms
  // Where the high watermark stands when the leader takes over (never below it afterwards).
  Offset high_watermark{0};
  Offset log_end{0};
  uint64_t now_ns = 0;
};

class ReplicaSet {
 public:
  explicit ReplicaSet(const ReplicaSetOptions& o);

  // The leader's log grew to `log_end`.
  void OnAppend(Offset log_end, uint64_t now_ns);
  // `follower` holds [.., end) durably (its ack). Unknown brokers and ends that go back are
  // ignored (an ack overtaken by a newer one); an end past the leader's log end is a protocol
  // error (kInvalidArgument).
  Status OnFollowerAck(BrokerId follower, Offset end, uint64_t now_ns);

  // What every in-sync replica holds. Never goes back.
  Offset high_watermark() const { return hw_; }
  Offset log_end() const { return log_end_; }
  const std::vector<BrokerId>& isr() const { return isr_; }
  // OK, or NOT_ENOUGH_REPLICAS-shaped kFailedPrecondition naming the ISR and min.insync.replicas.
  Status CheckAcksAll() const;
  // The topic's min.insync.replicas changed (AlterTopic).
  void SetMinInsync(int32_t n) { min_insync_ = n; }

  // The ISR the leader should propose now, or nullopt when it is right: followers that lag (not
  // caught up with the log end for lag_time_max) leave, followers outside that hold the high
  // watermark (and everything the leader had when they last acked) rejoin. The leader stays.
  std::optional<std::vector<BrokerId>> ProposedIsr(uint64_t now_ns) const;
  // The ISR as written (after a successful compare-and-set, or as the controller changed it).
  void SetIsr(std::vector<BrokerId> isr);

 private:
  struct Follower {
    Offset end{0};              // acknowledged
    uint64_t caught_up_ns = 0;  // the last time it held everything the leader held
    Offset leader_end_seen{0};  // the leader's log end at its last ack
    uint64_t last_ack_ns = 0;
  };
  void Recompute();

  const BrokerId leader_;
  const std::vector<BrokerId> replicas_;
  int32_t min_insync_;
  const uint64_t lag_ns_;
  std::vector<BrokerId> isr_;
  std::map<BrokerId, Follower> followers_;
  Offset log_end_{0};
  Offset hw_{0};
};

}  // namespace rdmq::cluster
