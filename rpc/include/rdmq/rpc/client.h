// rpc::Client: a FLOCK connection handle (docs/rpc.md). It owns several channels to one server
// (each a fabric Endpoint, a QP on verbs) that any number of threads share:
//   * Sending: threads queue on the channel's thread combining queue; the head of the queue
//     leads, gathers the requests of up to max_coalesce - 1 followers into one message, writes
//     it with one batch of WRITEs (selectively signalled; only the leader posts and polls
//     completions), and hands leadership to the first follower it left out.
//   * Receiving: responses are routed by thread id and sequence id. Waiting callers poll the
//     response rings themselves while they spin; a dispatcher thread takes over when nobody
//     spins (it parks when idle and the server wakes it through a doorbell).
//   * Credits: C per channel, renewed at half; a refusal deactivates the channel.
//   * Thread scheduler: a thread runs Algorithm 1 every interval and whenever a channel's state
//     changes; a caller moves to its new channel only once its responses on the old one are in.
//
// Calls: Call() blocks up to its timeout. CallAsync() returns at once; its callback (or future)
// completes on the thread that polls responses, so callbacks must be short and must not block
// on another Call. When the server goes away or breaks the protocol, every outstanding call
// fails with RpcErrc::kDisconnected within a few milliseconds, and later calls fail at once.
//
// Errors a call can return: kMessageTooLarge (nothing sent), kTimedOut, kDisconnected,
// kShutdown, kUnknownHandler, kTooManyThreads, or the handler's own error (its generic
// condition, context "server: <message>").
//
// Ownership and lifetime: the Client borrows the Fabric, which must outlive it. No thread may be
// inside Call/CallAsync when the Client is destroyed; outstanding async calls complete with
// kShutdown during destruction.
// Threading: every method is thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/rpc/errors.h"

namespace rdmq::rpc {

struct ClientOptions {
  uint32_t channels = 2;
  uint64_t request_ring_bytes = 256 << 10;   // per channel, in server memory
  uint64_t response_ring_bytes = 256 << 10;  // per channel, in client memory
  // Requests per message (1: no coalescing). Also bounded by the credits left.
  uint32_t max_coalesce = 16;
  // Combining window: a leader yields (up to this long) while callers that a completion just
  // woke have not queued their next request yet, so that they join its message. Helps when
  // threads outnumber cores; 0 turns it off.
  std::chrono::microseconds combining_window{30};
  // How threads share a channel: FLOCK coalescing, or one request per message under a
  // spinlock (the "FaRM-like" baseline of the thesis's Figure 4.4).
  enum class Sharing { kCoalescing, kSpinlock };
  Sharing sharing = Sharing::kCoalescing;
  // Which channel a thread uses: the thread scheduler (Algorithm 1), or thread i on channel
  // i % channels for the life of the client (benchmarks' "one channel per thread").
  enum class Placement { kScheduler, kPinned };
  Placement placement = Placement::kScheduler;
  std::chrono::milliseconds schedule_interval{5};
  std::chrono::microseconds spin{20};  // how long a waiter spins before it sleeps
  // How long the dispatcher thread spins for responses nobody waits on (async calls) before it
  // parks. 0 suits machines with few cores: a spinning dispatcher takes the core the calling
  // threads need; the server's doorbell wakes it instead.
  std::chrono::microseconds dispatcher_spin{0};
  std::chrono::milliseconds park_timeout{5};  // bounded sleep: safety net for lost wake-ups
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds incomplete_message_timeout{1000};
  uint32_t max_threads = 4096;  // distinct threads that may call
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
};

class Client {
 public:
  struct Stats {
    uint64_t calls = 0;
    uint64_t messages = 0;  // request messages written
    uint64_t requests = 0;  // requests in them (requests/messages = coalescing degree)
    uint64_t responses = 0;
    uint64_t response_messages = 0;
    uint64_t renewals = 0;      // credit renewals requested
    uint64_t refusals = 0;      // renewals refused / deactivations seen
    uint64_t activations = 0;   // channels (re)activated by the server
    uint64_t head_reads = 0;    // READs of the server's ring head (cached head said full)
    uint64_t credit_waits = 0;  // times a leader found no credit left
    uint64_t migrations = 0;    // threads moved to another channel
    uint64_t schedules = 0;     // thread scheduler runs
    uint64_t timeouts = 0;
    uint64_t late_responses = 0;  // responses to calls that had timed out
  };
  using Callback = std::function<void(Result<std::string>)>;

  // Connects `options.channels` channels to the rpc::Server listening at `address` (a fabric
  // bootstrap address). Fails with the fabric's error or RpcErrc::kHandshake.
  static Result<std::unique_ptr<Client>> Connect(fabric::Fabric& fabric, std::string_view address,
                                                 ClientOptions options = {});
  virtual ~Client() = default;

  virtual Result<std::string> Call(uint16_t handler, std::span<const std::byte> request,
                                   std::chrono::nanoseconds timeout) = 0;
  Result<std::string> Call(uint16_t handler, std::string_view request, std::chrono::nanoseconds timeout) {
    return Call(handler, std::as_bytes(std::span(request.data(), request.size())), timeout);
  }
  // Sends the request and returns; `done` receives the result exactly once. An error returned
  // here (e.g. kMessageTooLarge, kDisconnected) means `done` will not be called.
  virtual Status CallAsync(uint16_t handler, std::span<const std::byte> request,
                           std::chrono::nanoseconds timeout, Callback done) = 0;
  std::future<Result<std::string>> CallAsync(uint16_t handler, std::span<const std::byte> request,
                                             std::chrono::nanoseconds timeout);

  // The id the server gave this connection handle (RequestContext::client_id on its side).
  virtual uint64_t client_id() const = 0;
  virtual uint32_t channels() const = 0;
  // The largest request (and response) payload one call can carry.
  virtual uint64_t max_request_bytes() const = 0;
  // False once the connection is broken (every call then fails with kDisconnected).
  virtual bool connected() const = 0;
  // The status that broke the connection (OK while connected).
  virtual Status broken_status() const = 0;
  // Which channels the server currently lets this handle use.
  virtual std::vector<bool> active_channels() const = 0;
  virtual Stats stats() const = 0;
};

}  // namespace rdmq::rpc
