#include "listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "rdmq/common/log.h"
#include "socket.h"

namespace rdmq::fabric::internal {

namespace asio = boost::asio;

// ---------------------------------------------------------------------------------- Listener

std::shared_ptr<Listener> Listener::Start(Agent& agent, UniqueFd listen_fd, AcceptFn on_accept) {
  std::shared_ptr<Listener> l(new Listener(agent, std::move(listen_fd), std::move(on_accept)));
  auto self = l;
  agent.Post([self] { self->Arm(); });
  return l;
}

Listener::Listener(Agent& agent, UniqueFd fd, AcceptFn on_accept)
    : agent_(agent), sd_(agent.io(), fd.release()), on_accept_(std::move(on_accept)) {}

Listener::~Listener() {
  boost::system::error_code ec;
  sd_.close(ec);
}

void Listener::Arm() {
  if (closed_.load()) return;
  auto self = shared_from_this();
  sd_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const boost::system::error_code& ec) {
    if (ec || self->closed_.load()) return;
    for (;;) {
      UniqueFd fd(::accept4(self->sd_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          RDMQ_LOG(kWarn, "fabric", "accept failed").kv("errno", errno);
        }
        break;
      }
      int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on Unix sockets
      std::string peer = SocketPeerName(fd.get());
      self->on_accept_(std::move(fd), std::move(peer));
      // accept4 on a blocking socket would block: take one per readiness unless more are queued.
      pollfd p{self->sd_.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 0) != 1) break;
    }
    self->Arm();
  });
}

void Listener::Close() {
  if (closed_.exchange(true)) return;
  auto self = shared_from_this();
  agent_.Post([self] {
    boost::system::error_code ec;
    self->sd_.cancel(ec);
    self->sd_.close(ec);
  });
}

// ---------------------------------------------------------------------------------- AcceptQueue

struct AcceptQueue::Pending : ConnHandler {
  AcceptQueue* queue = nullptr;
  std::shared_ptr<Conn> conn;
  Mutex mu;
  bool have_hello GUARDED_BY(mu) = false;
  bool dead GUARDED_BY(mu) = false;
  wire::Hello hello GUARDED_BY(mu);
  std::vector<UniqueFd> fds GUARDED_BY(mu);

  void OnFrame(uint8_t type, uint16_t, std::span<const std::byte> payload,
               std::vector<UniqueFd>& f) override {
    bool ready = false;
    {
      MutexLock l(mu);
      auto h = wire::DecodeHello(payload);
      if (type != wire::kFrameHello || have_hello || !h.ok()) {
        dead = true;
      } else {
        hello = std::move(h).value();
        fds = std::move(f);
        have_hello = ready = true;
      }
    }
    if (ready) {
      queue->Notify();
    } else {
      RDMQ_LOG(kWarn, "fabric", "closing a connection that did not start with a hello")
          .kv("peer", conn->peer());
      conn->Close();
    }
  }
  void OnClosed(const Status&) override {
    MutexLock l(mu);
    dead = true;
  }
};

void AcceptQueue::OnAccept(UniqueFd fd, std::string peer, std::unique_ptr<TlsSession> tls) {
  auto p = std::make_shared<Pending>();
  p->queue = this;
  p->conn = Conn::Create(agent_, std::move(fd), std::move(peer), std::move(tls));
  {
    MutexLock l(mu_);
    pending_.push_back(p);
  }
  p->conn->Start(p);
}

AcceptQueue::~AcceptQueue() {
  MutexLock l(mu_);
  // (The agent is stopped by now: no handler runs concurrently.)
  for (const auto& p : pending_) {
    std::shared_ptr<Conn> conn = std::move(p->conn);
    if (conn) conn->Close();
  }
  pending_.clear();
}

void AcceptQueue::Notify() {
  MutexLock l(mu_);
  cv_.NotifyAll();
}

std::optional<AcceptQueue::Incoming> AcceptQueue::Next(std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  UniqueLock l(mu_);
  for (;;) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      std::shared_ptr<Pending> p = *it;
      MutexLock pl(p->mu);
      if (p->dead) {
        it = pending_.erase(it);
      } else if (p->have_hello) {
        pending_.erase(it);
        return Incoming{p->conn, std::move(p->hello), std::move(p->fds)};
      } else {
        ++it;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    cv_.WaitUntil(l, deadline);
  }
}

}  // namespace rdmq::fabric::internal
