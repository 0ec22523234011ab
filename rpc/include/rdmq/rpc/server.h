// rpc::Server: the receiving side of FLOCK's shared-connection RPC (docs/rpc.md).
//
// The server accepts connection handles through a fabric::Fabric (its own listener: every
// connection that arrives on that fabric is taken to be an RPC channel). Each channel of a handle
// has a request ring in server memory (the client WRITEs messages into it) and a response ring
// in client memory (the server WRITEs coalesced responses into it). Threads:
//   * acceptor: accepts endpoints and runs the connect handshake;
//   * dispatcher: polls every request ring, runs kDispatcher handlers inline, writes responses;
//     spins briefly when idle, then parks (futex on shm; woken by a peer's doorbell);
//   * channel scheduler: polls the shared receive CQ for credit renewals (WRITE_WITH_IMM),
//     grants or refuses them, redistributes active channels by Equation 3.1 every interval,
//     and drops connections whose peer went away;
//   * a worker pool for kWorkerPool handlers (created when such a handler is registered).
//
// Handlers: `Status fn(const RequestContext&, std::span<const std::byte> request,
// ResponseBuffer& response)`. The request bytes are valid only during the call. A handler that
// returns an error sends that error back to the caller (its generic condition and message);
// an unknown handler id gets RpcErrc::kUnknownHandler back. A kDispatcher handler must not block:
// it runs on the thread that serves every connection.
//
// Bad peers: a malformed message, a credit violation, garbage in a ring that never forms a
// message (for longer than ServerOptions::incomplete_message_timeout), or a handshake error
// closes that connection handle only, logs why (client id, channel, ring position), and every
// other connection keeps being served.
//
// Ownership and lifetime: the Server borrows the Fabric, which must outlive it. Destroying the
// Server stops its threads and closes every connection.
// Threading: RegisterHandler before Start; everything else may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/rpc/errors.h"

namespace rdmq::rpc {

struct RequestContext {
  uint64_t client_id = 0;  // stable for the connection handle, the same on each of its channels
  uint32_t channel = 0;    // channel index within the handle
  uint32_t thread_id = 0;  // the calling thread's id within the handle
  uint32_t seq = 0;        // the thread's sequence id of this request
  uint16_t handler_id = 0;
  std::string_view peer;  // the client's address as the fabric reports it
  // The CN of the client's verified TLS certificate (fabric::Endpoint::peer_identity), or "".
  std::string_view peer_identity;
};

// Where a handler writes its response. Reused between calls: starts empty.
class ResponseBuffer {
 public:
  void Append(std::span<const std::byte> b) {
    buf_.append(reinterpret_cast<const char*>(b.data()), b.size());
  }
  void Append(std::string_view s) { buf_.append(s); }
  // Appends n bytes (uninitialised) and returns where they start.
  std::byte* Grow(size_t n) {
    const size_t old = buf_.size();
    buf_.resize(old + n);
    return reinterpret_cast<std::byte*>(buf_.data() + old);
  }
  void Resize(size_t n) { buf_.resize(n); }
  void Clear() noexcept { buf_.clear(); }
  size_t size() const noexcept { return buf_.size(); }
  std::span<const std::byte> bytes() const noexcept {
    return {reinterpret_cast<const std::byte*>(buf_.data()), buf_.size()};
  }
  std::string& str() noexcept { return buf_; }

 private:
  std::string buf_;
};

using Handler = std::function<Status(const RequestContext&, std::span<const std::byte>, ResponseBuffer&)>;

enum class RunOn { kDispatcher, kWorkerPool };

struct ServerOptions {
  uint32_t credits = 32;               // C: requests per grant
  uint32_t max_active_channels = 256;  // MAX_AQP of Equation 3.1
  std::chrono::milliseconds schedule_interval{10};
  uint32_t worker_threads = 2;  // pool size when a kWorkerPool handler exists
  // Rings: a client's wish for its request ring (server memory) is capped here, and a response
  // ring (client memory, mirrored in server staging) larger than this is refused.
  uint64_t max_ring_bytes = 4ull << 20;
  uint32_t max_channels = 1024;  // all clients together (receive CQ capacity)
  std::chrono::microseconds spin_before_park{50};
  std::chrono::milliseconds park_timeout{5};  // bounded sleep: safety net for lost wake-ups
  std::chrono::milliseconds incomplete_message_timeout{1000};
  std::chrono::milliseconds handshake_timeout{5000};
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
};

class Server {
 public:
  struct Stats {
    uint64_t messages = 0;           // request messages dispatched
    uint64_t requests = 0;           // requests in them
    uint64_t response_messages = 0;  // response messages written (control messages included)
    uint64_t renewals_granted = 0;
    uint64_t renewals_refused = 0;
    uint64_t redistributions = 0;
    uint64_t activations = 0;
    uint64_t deactivations = 0;
    uint64_t connections_accepted = 0;  // connection handles
    uint64_t connections_closed = 0;
    uint64_t protocol_errors = 0;  // connections closed for bad input
    uint64_t unknown_handler = 0;
    uint64_t parks = 0;  // times the dispatcher went to sleep
  };

  static Result<std::unique_ptr<Server>> Create(fabric::Fabric& fabric, ServerOptions options = {});
  virtual ~Server() = default;

  // Registers `fn` under `id` (before Start). kAlreadyExists if taken.
  virtual Status RegisterHandler(uint16_t id, Handler fn, RunOn where = RunOn::kDispatcher) = 0;
  // Starts accepting and serving.
  virtual Status Start() = 0;
  // Stops every thread and closes every connection. Idempotent; the destructor calls it.
  virtual void Stop() = 0;

  // Called (on a server thread) when a connection handle closes, for whatever reason, so that
  // the owner can drop what it holds for that client (leases, subscriptions). Set before Start.
  virtual void OnDisconnect(std::function<void(uint64_t client_id)> fn) = 0;
  // Closes one connection handle (all its channels).
  virtual void Disconnect(uint64_t client_id) = 0;
  // Changes MAX_AQP; the next scheduling interval applies it.
  virtual void SetMaxActiveChannels(uint32_t n) = 0;

  virtual Stats stats() const = 0;
  virtual size_t clients() const = 0;
};

}  // namespace rdmq::rpc
