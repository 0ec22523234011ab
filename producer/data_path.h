// The producer's data endpoint (docs/protocol.md section 4): one posting thread at a time (the
// fabric's rule), one poller of its completion queues at a time, and what a poller collects for
// the others: completed operations that a thread waits for (PostAndWait) and failed writes,
// by partition.
//
// Work-request tags: the top byte says what the request was (kTagWrite: a batch's WRITE, low
// bits its partition; kTagWait: an operation someone waits for, low bits its id).
//
// Threading: thread-safe. Endpoint calls other than posting (GrantAccess, Attach, destroying a
// RemoteRegion) are made with post_mu() held, through endpoint().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "rdmq/client/connection.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"

namespace rdmq::producer {

inline constexpr uint64_t kTagKindShift = 56;
inline constexpr uint64_t kTagWrite = 1;  // low bits: partition number (errors only)
inline constexpr uint64_t kTagWait = 2;   // low bits: wait-op id

class DataPath {
 public:
  // Uses `conn`'s data endpoint and posts its receives; operations waited for time out after
  // `op_timeout`. `closing` (set when the producer closes) silences the broken-connection warning.
  Status Init(client::Connection* conn, std::chrono::milliseconds op_timeout,
              const std::atomic<bool>* closing) EXCLUDES(post_mu_);

  Mutex& post_mu() RETURN_CAPABILITY(post_mu_) { return post_mu_; }
  fabric::Endpoint& endpoint() REQUIRES(post_mu_) { return *conn_->data(); }
  // The endpoint is usable: not suspended for a reconnect. Callers that attach or grant check
  // it (under post_mu) first.
  Status Usable() const REQUIRES(post_mu_);

  // --- Reconnecting (core.h, "losing the broker").
  // The broker went away: posts, attachments and grants fail from now on, and operations
  // waited for on the old endpoint fail at once instead of at their timeout.
  void Suspend() EXCLUDES(post_mu_, ops_mu_);
  // Installs the connection's new link (Connection::Install) and posts its receives. The
  // caller has dropped everything attached to or granted on the old endpoint.
  Status Resume(std::unique_ptr<client::Connection::Link> link) EXCLUDES(post_mu_, ops_mu_);

  // Posts, waiting (and draining the queues) while the send queue is full.
  Status Post(std::span<const fabric::WorkRequest> wrs) EXCLUDES(post_mu_);
  // Posts one signaled request and waits for its completion (draining the queues meanwhile).
  Status PostAndWait(fabric::WorkRequest wr) EXCLUDES(post_mu_, ops_mu_);
  // Polls both completion queues (unless another thread is): reposts receives, records
  // completions. True if anything completed.
  bool Drain() EXCLUDES(post_mu_, ops_mu_);
  // The partitions whose writes failed since the last call.
  void TakeFailedWrites(std::vector<uint32_t>& out) EXCLUDES(ops_mu_);

 private:
  client::Connection* conn_ = nullptr;
  std::chrono::milliseconds op_timeout_{0};
  const std::atomic<bool>* closing_ = nullptr;
  std::atomic_flag polling_ = ATOMIC_FLAG_INIT;  // one poller at a time
  std::atomic<bool> broken_logged_{false};
  // The current endpoint's id: completions of an older one (after a reconnect) are stale.
  std::atomic<uint64_t> endpoint_id_{0};
  Mutex post_mu_ ACQUIRED_BEFORE(ops_mu_);  // one posting thread at a time on the endpoint
  uint32_t recv_owed_ GUARDED_BY(post_mu_) = 0;
  bool suspended_ GUARDED_BY(post_mu_) = false;
  Mutex ops_mu_;
  uint64_t next_op_ GUARDED_BY(ops_mu_) = 1;
  uint64_t failed_below_ GUARDED_BY(ops_mu_) = 0;  // ops before a Suspend fail
  std::unordered_map<uint64_t, std::error_code> ops_done_ GUARDED_BY(ops_mu_);
  std::vector<uint32_t> failed_parts_ GUARDED_BY(ops_mu_);  // write errors seen while draining
};

}  // namespace rdmq::producer
