// Membership: a consumer's side of the group protocol (docs/groups.md). A background thread sends
// GroupHeartbeat every heartbeat interval (sooner when the owned set changed or a join is due)
// with the subscription and the partitions the consumer owns; it keeps the latest assignment the
// broker gave. The polling thread reads the assignment (Target), applies it to the consumer and
// reports what it owns now (SetOwned). Errors that fence the member (unknown member, fenced
// epoch) mark what it owned as lost and make it rejoin; an unreachable broker is reconnected to
// and retried with backoff (after a broker restart the member is unknown: lost, rejoin); in a
// cluster the heartbeats go to the group's coordinator, found again (FindCoordinator) after the
// connection broke or a NOT_COORDINATOR answer; other errors (a bad subscription) are kept for
// Poll to return.
//
// Threading: every method is thread-safe; the heartbeat thread runs between Start and Leave.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/client/connection.h"
#include "rdmq/common/mutex.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/protocol/group_messages.h"

namespace rdmq::consumer::internal {

class Membership {
 public:
  Membership(const ConsumerConfig& cfg, client::Connection& conn) : cfg_(cfg), conn_(conn) {}
  ~Membership() { Stop(); }
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Sets the subscription (topic names, or a regex) and starts heartbeating (joining).
  void Subscribe(std::vector<std::string> topics, std::string regex) EXCLUDES(mu_);
  // The partitions the broker lets this member own now; nullopt before the first answer.
  std::optional<std::vector<TopicPartition>> Target() const EXCLUDES(mu_);
  // What the consumer owns after applying Target; heartbeats at once if it changed.
  void SetOwned(std::vector<TopicPartition> owned) EXCLUDES(mu_);
  // True once (and then false) after the membership was fenced: everything owned is lost.
  bool TakeLost() EXCLUDES(mu_);
  // An error the application must see (bad subscription, bad group id), once.
  Status TakeError() EXCLUDES(mu_);
  // The member id and epoch for an OffsetCommit.
  std::pair<std::string, int32_t> Identity() const EXCLUDES(mu_);
  // Waits up to `timeout` for a heartbeat answer newer than now (after a STALE_MEMBER_EPOCH).
  void AwaitHeartbeat(std::chrono::milliseconds timeout) EXCLUDES(mu_);
  // Leaves the group (epoch -1, or -2 for a static member) and stops the thread. Waits at most
  // `timeout` for the broker's answer.
  void Leave(std::chrono::milliseconds timeout) EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);
  protocol::GroupHeartbeatRequest Request() const REQUIRES(mu_);
  void OnAnswer(const Result<protocol::GroupHeartbeatResponse>& r) REQUIRES(mu_);

  const ConsumerConfig& cfg_;
  client::Connection& conn_;
  mutable Mutex mu_;
  CondVar cv_;
  bool running_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  bool urgent_ GUARDED_BY(mu_) = false;   // heartbeat now
  bool relocate_ GUARDED_BY(mu_) = true;  // find the coordinator before the next heartbeat
  std::vector<std::string> topics_ GUARDED_BY(mu_);
  std::string regex_ GUARDED_BY(mu_);
  std::string member_id_ GUARDED_BY(mu_);
  int32_t epoch_ GUARDED_BY(mu_) = 0;
  std::optional<std::vector<TopicPartition>> target_ GUARDED_BY(mu_);
  std::vector<TopicPartition> owned_ GUARDED_BY(mu_);
  bool lost_ GUARDED_BY(mu_) = false;
  Status error_ GUARDED_BY(mu_);
  uint64_t answers_ GUARDED_BY(mu_) = 0;
  std::chrono::milliseconds interval_ GUARDED_BY(mu_){1000};
  std::chrono::milliseconds backoff_ GUARDED_BY(mu_){0};
  std::thread thread_;
};

}  // namespace rdmq::consumer::internal
