// HttpServer on Boost.Asio: one io_context and one thread; each connection reads, lets its
// HttpConversation answer, writes, and closes after 30 s without a request.
// clang-format off
#include <utility>  // Boost 1.74's Asio uses std::exchange without including it (g++ 12, C++20)
#include <boost/asio.hpp>
// clang-format on
#include <array>
#include <memory>
#include <thread>
#include <vector>

#include "rdmq/common/log.h"
#include "rdmq/common/mutex.h"
#include "rdmq/metrics/http.h"
#include "rdmq/metrics/tcp_listen.h"

namespace rdmq::metrics {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr auto kIdle = std::chrono::seconds(30);

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket s, const HttpHandler& handler)
      : socket_(std::move(s)), timer_(socket_.get_executor()), conv_(handler) {}

  void Start() {
    Arm();
    Read();
  }
  // Closes the socket and cancels the timer (only while the server's thread is not running).
  void Shut() {
    boost::system::error_code ec;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  void Arm() {
    timer_.expires_after(kIdle);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->Shut();
    });
  }
  void Read() {
    socket_.async_read_some(asio::buffer(chunk_),
                            [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                              if (ec) return self->Shut();
                              self->in_.append(self->chunk_.data(), n);
                              self->Answer();
                            });
  }
  // Answers every complete request in the buffer, one write at a time, then reads again.
  void Answer() {
    HttpConversation::Step step = conv_.Feed(in_);
    in_.erase(0, step.consumed);
    if (step.output.empty()) return Read();
    Arm();
    out_ = std::move(step.output);
    asio::async_write(
        socket_, asio::buffer(out_),
        [self = shared_from_this(), close = step.close](const boost::system::error_code& ec, size_t) {
          if (ec || close) return self->Shut();
          self->Answer();
        });
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  HttpConversation conv_;
  std::array<char, 4096> chunk_{};
  std::string in_;
  std::string out_;
};

class AsioHttpServer final : public HttpServer {
 public:
  explicit AsioHttpServer(HttpHandler handler) : acceptor_(io_), handler_(std::move(handler)) {}
  // (Stop throws only if joining its own thread fails: a bug, which terminating reports.)
  ~AsioHttpServer() override { Stop(); }  // NOLINT(bugprone-exception-escape)

  Status Bind(const std::string& listen) {
    RDMQ_ASSIGN_OR_RETURN(address_, ListenTcp(acceptor_, listen));
    Accept();
    thread_ = std::thread([this] {
      auto guard = asio::make_work_guard(io_);
      io_.run();
    });
    return Status::Ok();
  }

  const std::string& address() const override { return address_; }

  void Stop() override {
    std::vector<std::weak_ptr<Connection>> conns;
    {
      MutexLock lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      conns.swap(conns_);
    }
    // Stop the thread first: then the acceptor and the sockets are this thread's to close.
    io_.stop();
    if (thread_.joinable()) thread_.join();
    boost::system::error_code ec;
    acceptor_.close(ec);
    for (auto& w : conns) {
      if (auto c = w.lock()) c->Shut();
    }
  }

 private:
  void Accept() {
    acceptor_.async_accept(io_, [this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) {
        RDMQ_LOG(kWarn, "http", "accept failed").kv("error", ec.message());
      } else {
        auto c = std::make_shared<Connection>(std::move(s), handler_);
        {
          MutexLock lock(mu_);
          if (stopped_) return;
          std::erase_if(conns_, [](const std::weak_ptr<Connection>& w) { return w.expired(); });
          conns_.push_back(c);
        }
        c->Start();
      }
      Accept();
    });
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  HttpHandler handler_;
  std::string address_;
  std::thread thread_;
  Mutex mu_;
  std::vector<std::weak_ptr<Connection>> conns_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen, HttpHandler handler) {
  auto s = std::make_unique<AsioHttpServer>(std::move(handler));
  RDMQ_RETURN_IF_ERROR(s->Bind(listen));
  return std::unique_ptr<HttpServer>(std::move(s));
}

}  // namespace rdmq::metrics
