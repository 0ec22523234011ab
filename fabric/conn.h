// The bootstrap/control plane shared by the providers: a per-Fabric agent thread running a
// Boost.Asio io_context (the "software NIC" of the tcp provider, the control server of shm and
// verbs), framed message connections over stream sockets (Unix or TCP) with optional file
// descriptor passing (SCM_RIGHTS), and listeners.
//
// Frame = 8-byte header {u32 payload length, u8 type, u8 number of fds, u16 flags} (little-
// endian) + payload. Fds ride on the sendmsg that carries the frame's first byte.
//
// Threading: Agent and Conn methods are thread-safe unless noted. Handlers run on the agent
// thread. Conn::Send from the agent thread (inside a handler) only queues; the queue is flushed
// when the handler returns, so that a burst of responses goes out in one write.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rdmq/common/status.h"
#include "util.h"
#include "wire.h"

namespace rdmq::fabric::internal {

inline constexpr size_t kFrameHeaderSize = 8;
// Largest payload accepted from a peer (a 64 MiB WRITE plus its header).
inline constexpr size_t kMaxFramePayload = (64u << 20) + 4096;
// Largest number of fds one frame may carry.
inline constexpr size_t kMaxFrameFds = 8;

class Agent {
 public:
  explicit Agent(std::string name);
  ~Agent();  // Stop(); pending handlers are destroyed with the io_context
  // Stops the io_context and joins the thread. Idempotent; not from the agent thread.
  void Stop();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  boost::asio::io_context& io() noexcept { return io_; }
  bool InThread() const noexcept { return std::this_thread::get_id() == thread_id_.load(); }
  void Post(std::function<void()> f);

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
};

class ConnHandler {
 public:
  virtual ~ConnHandler() = default;
  // A complete frame. `fds` are the descriptors that came with it (owned by the handler now).
  virtual void OnFrame(uint8_t type, uint16_t flags, std::span<const std::byte> payload,
                       std::vector<UniqueFd>& fds) = 0;
  // The connection ended (EOF, error, protocol violation or Close). Called once, last.
  virtual void OnClosed(const Status& why) = 0;
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  // Takes ownership of a connected stream socket.
  static std::shared_ptr<Conn> Create(Agent& agent, UniqueFd fd, std::string peer);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Installs the handler and starts reading. Call once.
  void Start(std::shared_ptr<ConnHandler> handler);
  // Replaces the handler (e.g. when an accepted connection becomes an endpoint).
  void SetHandler(std::shared_ptr<ConnHandler> handler);
  // After return no callback is running or will run (safe to call from inside a callback).
  // The caller must not hold a lock that a callback takes.
  void ClearHandler();

  // Sends one frame made of `parts` (gathered), with `fds` (duplicated if they must wait).
  // kPeerGone when the connection is closed.
  Status Send(uint8_t type, uint16_t flags, std::span<const iovec> parts, std::span<const int> fds = {});
  Status Send(uint8_t type, uint16_t flags, std::span<const std::byte> payload) {
    iovec v{const_cast<std::byte*>(payload.data()), payload.size()};
    return Send(type, flags, std::span<const iovec>(&v, 1));
  }
  // Sends bytes that already are complete frames (several of them: one write for a batch).
  // With `borrow`, parts of at least kBorrowMin bytes that cannot be written at once are queued
  // by reference, not copied: the caller keeps them valid and unchanged until the connection
  // is closed or the peer has answered for them (the verbs rule for a posted WRITE's buffer).
  Status SendFramed(std::span<const iovec> parts, bool borrow = false);
  static constexpr size_t kBorrowMin = 16 * 1024;
  // Encodes a frame header into `out` (kFrameHeaderSize bytes).
  static void EncodeHeader(std::byte* out, uint32_t payload_len, uint8_t type, uint8_t nfds, uint16_t flags);
  // Shuts the socket down; the agent then closes it and calls OnClosed. Idempotent.
  void Close();
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  const std::string& peer() const noexcept { return peer_; }
  int fd() const noexcept { return fd_; }

 private:
  struct OutChunk {
    std::unique_ptr<std::byte[]> buf;     // not zero-filled: it is overwritten at once
    const std::byte* borrowed = nullptr;  // the caller's memory, when not copied
    size_t size = 0;
    const std::byte* data() const noexcept { return borrowed ? borrowed : buf.get(); }
    size_t sent = 0;
    std::vector<UniqueFd> fds;  // sent with the first byte
  };
  Conn(Agent& agent, UniqueFd fd, std::string peer);
  void ArmRead();
  void OnReadable();
  void ArmWriteLocked();
  void OnWritable();
  // Writes queued chunks until the socket would block. Requires mu_. Returns false on a socket
  // error (then the connection is being shut down).
  bool FlushLocked();
  void ParseFrames();
  void Fail(const Status& why);
  void ShutdownLocked() noexcept;
  Status SendLocked(std::span<const iovec> parts, size_t total, std::span<const int> fds,
                    bool borrow = false);

  Agent& agent_;
  const int fd_;  // owned by sd_
  boost::asio::posix::stream_descriptor sd_;
  std::string peer_;

  std::mutex mu_;  // guards the out queue, write_armed_ and the socket's life
  std::deque<OutChunk> out_;
  bool write_armed_ = false;
  bool dispatching_ = false;  // the agent is inside a read burst: sends from it just queue
  std::atomic<bool> closed_{false};
  bool finished_ = false;  // agent: the descriptor was closed and OnClosed delivered

  std::recursive_mutex handler_mu_;
  std::shared_ptr<ConnHandler> handler_;

  // Agent-thread read state.
  std::vector<std::byte> in_;
  size_t in_begin_ = 0, in_end_ = 0;
  std::deque<UniqueFd> in_fds_;
};

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

// Connections accepted by a listener wait here until their hello frame arrived and Accept()
// takes them. Thread-safe.
class AcceptQueue {
 public:
  struct Incoming {
    std::shared_ptr<Conn> conn;
    wire::Hello hello;
    std::vector<UniqueFd> fds;
  };
  explicit AcceptQueue(Agent& agent) : agent_(agent) {}
  // Agent thread: a new connection; its first frame must be a hello.
  void OnAccept(UniqueFd fd, std::string peer);
  // The next connection whose hello arrived, waiting up to `timeout`; nullopt on timeout.
  std::optional<Incoming> Next(std::chrono::nanoseconds timeout);

 private:
  struct Pending;
  void Notify();
  Agent& agent_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Pending>> pending_;
};

// Socket helpers. Listen* return the bound address in `bound` ("path" or "host:port").
Result<UniqueFd> ListenUnix(const std::string& path);
Result<UniqueFd> ListenTcp(const std::string& host, uint16_t port, std::string* bound);
Result<UniqueFd> ConnectUnix(const std::string& path, std::chrono::milliseconds timeout);
Result<UniqueFd> ConnectTcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);
std::string SocketPeerName(int fd);

}  // namespace rdmq::fabric::internal
