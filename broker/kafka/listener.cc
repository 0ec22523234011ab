#include "broker/kafka/listener.h"

#include <algorithm>

#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

namespace asio = boost::asio;

Result<std::unique_ptr<KafkaListener>> KafkaListener::Start(const std::string& listen, uint32_t threads,
                                                            uint64_t max_request,
                                                            KafkaRequestHandler& handler,
                                                            std::unique_ptr<asio::ssl::context> tls) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos)
    return Status(Errc::kInvalidArgument, "listen.kafka '" + listen + "' is not host:port");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = listen.substr(colon + 1);
  std::unique_ptr<KafkaListener> l(new KafkaListener(handler, max_request));
  l->tls_ = std::move(tls);
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(l->io_);
  auto found = resolver.resolve(
      host, port, asio::ip::tcp::resolver::passive | asio::ip::tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) {
    return Status(Errc::kInvalidArgument,
                  "listen.kafka " + listen + ": cannot resolve '" + host + "': " + ec.message());
  }
  const asio::ip::tcp::endpoint ep = found.begin()->endpoint();
  l->acceptor_.open(ep.protocol(), ec);
  if (!ec) l->acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) l->acceptor_.bind(ep, ec);
  if (!ec) l->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ec == asio::error::address_in_use ? Errc::kAlreadyExists : Errc::kUnavailable,
                  "listen.kafka " + listen + ": " + ec.message() +
                      " (set listen.kafka=HOST:PORT elsewhere, or listen.kafka=off)");
  }
  const auto bound = l->acceptor_.local_endpoint(ec);
  const std::string bound_host =
      bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
  l->address_ = bound_host + ":" + std::to_string(bound.port());
  l->Accept();
  for (uint32_t i = 0; i < std::max<uint32_t>(threads, 1); ++i) {
    l->threads_.emplace_back([io = &l->io_] {
      auto guard = asio::make_work_guard(*io);
      io->run();
    });
  }
  return l;
}

void KafkaListener::Accept() {
  acceptor_.async_accept(
      asio::make_strand(io_), [this](const boost::system::error_code& ec, asio::ip::tcp::socket s) {
        if (ec) {
          if (ec == asio::error::operation_aborted) return;
          RDMQ_LOG(kWarn, "kafka", "accept failed").kv("error", ec.message());
        } else {
          KafkaStream stream = tls_ ? KafkaStream(std::move(s), *tls_) : KafkaStream(std::move(s));
          auto conn = std::make_shared<KafkaConnection>(std::move(stream), handler_, max_request_);
          {
            MutexLock lock(mu_);
            if (stopped_) return;
            // Forget connections that are gone (the list only grows between sweeps).
            std::erase_if(connections_, [](const std::weak_ptr<KafkaConnection>& w) { return w.expired(); });
            connections_.push_back(conn);
          }
          conn->Start();
        }
        Accept();
      });
}

void KafkaListener::Stop() {
  std::vector<std::weak_ptr<KafkaConnection>> conns;
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    conns.swap(connections_);
  }
  asio::post(io_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
  for (auto& w : conns) {
    if (auto c = w.lock()) c->Close();
  }
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace rdmq::broker::internal
