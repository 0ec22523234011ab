// KafkaListener: the Kafka protocol's front door (listen.kafka). A Boost.Asio io_context run by
// kafka.network.threads threads of its own, so Kafka traffic never slows the one-sided path; it
// accepts connections and gives each a KafkaConnection feeding the request handler.
//
// Threading: Start and Stop from the broker's start-up and shutdown; the handler runs on the
// listener's threads. Stop closes the acceptor and every connection and joins the threads.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "broker/kafka/asio.h"
#include "broker/kafka/connection.h"
#include "broker/kafka/stream.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"

namespace rdmq::broker::internal {

class KafkaListener {
 public:
  // Binds `listen` (host:port, port 0: any free port). With `tls`, every connection is TLS.
  static Result<std::unique_ptr<KafkaListener>> Start(
      const std::string& listen, uint32_t threads, uint64_t max_request, KafkaRequestHandler& handler,
      std::unique_ptr<boost::asio::ssl::context> tls = nullptr);
  ~KafkaListener() { Stop(); }
  KafkaListener(const KafkaListener&) = delete;
  KafkaListener& operator=(const KafkaListener&) = delete;

  // The address bound (host:port with the real port).
  const std::string& address() const { return address_; }
  boost::asio::io_context& io() { return io_; }
  void Stop() EXCLUDES(mu_);

 private:
  KafkaListener(KafkaRequestHandler& handler, uint64_t max_request)
      : acceptor_(io_), handler_(handler), max_request_(max_request) {}
  void Accept();

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  KafkaRequestHandler& handler_;
  const uint64_t max_request_;
  std::unique_ptr<boost::asio::ssl::context> tls_;
  std::string address_;
  std::vector<std::thread> threads_;
  Mutex mu_;
  std::vector<std::weak_ptr<KafkaConnection>> connections_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace rdmq::broker::internal
