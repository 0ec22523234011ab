// KafkaStream: a Kafka client's byte stream, plain TCP or TLS over it (kafka.security.protocol),
// with the members Asio's composed operations need (async_read_some, async_write_some,
// get_executor), so that KafkaConnection is written once for both.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "broker/kafka/asio.h"
// (after asio.h, which works around Boost 1.74's missing include)
#include <boost/asio/ssl.hpp>

namespace rdmq::broker::internal {

class KafkaStream {
 public:
  using tcp = boost::asio::ip::tcp;
  using executor_type = tcp::socket::executor_type;
  using TlsStream = boost::asio::ssl::stream<tcp::socket>;

  explicit KafkaStream(tcp::socket s) : plain_(std::move(s)) {}
  KafkaStream(tcp::socket s, boost::asio::ssl::context& tls)
      : plain_(s.get_executor()), tls_(std::make_unique<TlsStream>(std::move(s), tls)) {}

  bool tls() const { return tls_ != nullptr; }
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : plain_; }
  executor_type get_executor() { return socket().get_executor(); }
  // TLS: the server side of the handshake (a plain stream completes at once).
  template <class Handler>
  void async_handshake(Handler&& h) {
    if (tls_) {
      tls_->async_handshake(boost::asio::ssl::stream_base::server, std::forward<Handler>(h));
    } else {
      boost::asio::post(get_executor(),
                        [h = std::forward<Handler>(h)]() mutable { h(boost::system::error_code()); });
    }
  }
  // The common name of the certificate the client presented and the handshake verified; empty
  // without TLS, without a certificate, or without a CN. (tls.cc)
  std::string PeerCommonName();

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& b, Handler&& h) {
    if (tls_) {
      tls_->async_read_some(b, std::forward<Handler>(h));
    } else {
      plain_.async_read_some(b, std::forward<Handler>(h));
    }
  }
  template <class Buffers, class Handler>
  void async_write_some(const Buffers& b, Handler&& h) {
    if (tls_) {
      tls_->async_write_some(b, std::forward<Handler>(h));
    } else {
      plain_.async_write_some(b, std::forward<Handler>(h));
    }
  }

 private:
  tcp::socket plain_;  // the socket of a plain stream (unused, never opened, with TLS)
  std::unique_ptr<TlsStream> tls_;
};

}  // namespace rdmq::broker::internal
