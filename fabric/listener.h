// Accepting bootstrap connections: a listening socket served by the agent, and the queue where
// accepted connections wait until their hello frame arrived and Endpoint Accept takes them.
//
// Threading: Listener callbacks run on the agent thread; AcceptQueue is thread-safe.
#pragma once

#include <atomic>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent.h"
#include "conn.h"
#include "posix.h"
#include "rdmq/common/mutex.h"
#include "wire.h"

namespace rdmq::fabric::internal {

// A listening socket served by the agent: every accepted connection is handed to `on_accept`
// on the agent thread.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  using AcceptFn = std::function<void(UniqueFd fd, std::string peer)>;
  static std::shared_ptr<Listener> Start(Agent& agent, UniqueFd listen_fd, AcceptFn on_accept);
  ~Listener();
  void Close();

 private:
  Listener(Agent& agent, UniqueFd fd, AcceptFn on_accept);
  void Arm();
  Agent& agent_;
  boost::asio::posix::stream_descriptor sd_;
  AcceptFn on_accept_;
  std::atomic<bool> closed_{false};
};

// Connections accepted by a listener wait here until their hello frame arrived and Next() takes
// them.
class AcceptQueue {
 public:
  struct Incoming {
    std::shared_ptr<Conn> conn;
    wire::Hello hello;
    std::vector<UniqueFd> fds;
  };
  explicit AcceptQueue(Agent& agent) : agent_(agent) {}
  // Closes the connections never taken: a pending connection and its handler refer to each other
  // until the connection fails, which a stopped agent no longer reports.
  ~AcceptQueue();
  // Agent thread: a new connection (inside TLS with `tls`); its first frame must be a hello.
  void OnAccept(UniqueFd fd, std::string peer, std::unique_ptr<TlsSession> tls = nullptr) EXCLUDES(mu_);
  // The next connection whose hello arrived, waiting up to `timeout`; nullopt on timeout.
  std::optional<Incoming> Next(std::chrono::nanoseconds timeout) EXCLUDES(mu_);

 private:
  struct Pending;
  void Notify() EXCLUDES(mu_);
  Agent& agent_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::shared_ptr<Pending>> pending_ GUARDED_BY(mu_);
};

}  // namespace rdmq::fabric::internal
