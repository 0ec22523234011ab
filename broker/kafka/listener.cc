#include "broker/kafka/listener.h"

#include <algorithm>

#include "rdmq/common/log.h"
#include "rdmq/metrics/tcp_listen.h"

namespace rdmq::broker::internal {

namespace asio = boost::asio;

Result<std::unique_ptr<KafkaListener>> KafkaListener::Start(const std::string& listen, uint32_t threads,
                                                            uint64_t max_request,
                                                            KafkaRequestHandler& handler,
                                                            std::unique_ptr<asio::ssl::context> tls) {
  std::unique_ptr<KafkaListener> l(new KafkaListener(handler, max_request));
  l->tls_ = std::move(tls);
  auto bound = metrics::ListenTcp(l->acceptor_, listen);
  if (!bound.ok()) {
    const Status& s = bound.status();
    const char* hint =
        s.is(Errc::kInvalidArgument) ? "" : " (set listen.kafka=HOST:PORT elsewhere, or listen.kafka=off)";
    return Status(s.code(), "listen.kafka " + std::string(s.context()) + hint);
  }
  l->address_ = std::move(*bound);
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
