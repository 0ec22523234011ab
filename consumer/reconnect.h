// Reconnector: brings a consumer's connection back after the broker went away (a restart, a
// crash): while the connection is broken it dials the bootstrap servers, spaced by the
// reconnect backoff (reconnect.backoff.ms doubling up to reconnect.backoff.max.ms, jittered),
// and installs the new link. The consumer drops what it attached to the old endpoint first (the
// `detach` hook) and reopens its partitions from their positions afterwards (the next Fetch).
//
// Threading: none; the consumer's polling thread owns it.
#pragma once

#include <chrono>
#include <functional>

#include "rdmq/client/backoff.h"
#include "rdmq/client/connection.h"
#include "rdmq/common/status.h"

namespace rdmq::consumer {

class Reconnector {
 public:
  explicit Reconnector(const client::ClientOptions& o)
      : backoff_(o.reconnect_backoff, o.reconnect_backoff_max) {}

  // OK (true: a new link was just installed, receives must be posted again) when `conn` is
  // connected; kUnavailable (with the last error) while the broker cannot be reached yet.
  // `detach` runs once per loss, before the old endpoint is replaced.
  Result<bool> Ensure(client::Connection& conn, const std::function<void()>& detach);
  // When the next attempt may be made (for a caller that waits).
  std::chrono::steady_clock::time_point next_attempt() const { return next_; }

 private:
  client::Backoff backoff_;
  bool lost_ = false;
  std::chrono::steady_clock::time_point next_{};
  Status last_;
};

}  // namespace rdmq::consumer
