// KafkaConnection: one Kafka client's TCP connection. Reads size-prefixed frames (a size above
// socket.request.max.bytes, or not positive, closes the connection), hands each to the request
// handler, and writes the replies in request order however they complete (Kafka clients pipeline
// requests and match responses by order). At most kMaxPending requests are outstanding: reading
// pauses until replies drain, so a client cannot make the broker buffer without bound.
//
// Threading: everything runs on the connection's strand; replies completed on other threads are
// posted to it. The connection lives as long as a read, a write or an unfinished reply holds it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "broker/kafka/asio.h"
#include "broker/kafka/reply.h"

namespace rdmq::broker::internal {

class KafkaConnection : public std::enable_shared_from_this<KafkaConnection> {
 public:
  static constexpr size_t kMaxPending = 64;

  KafkaConnection(boost::asio::ip::tcp::socket socket, KafkaRequestHandler& handler, uint64_t max_request);
  void Start();
  // Closes the socket (from any thread); outstanding replies are dropped.
  void Close();
  const std::string& peer() const { return peer_; }

 private:
  struct Slot {
    bool ready = false;
    KafkaReply reply;
  };
  void ReadSize();
  void ReadBody(uint32_t size);
  void Dispatch();
  void Complete(const std::shared_ptr<Slot>& slot, KafkaReply reply);
  void Flush();
  void Fail(const char* what, const boost::system::error_code& ec);

  boost::asio::ip::tcp::socket socket_;  // its executor is the connection's strand
  KafkaRequestHandler& handler_;
  const uint64_t max_request_;
  std::string peer_;
  std::byte size_buf_[4];
  std::shared_ptr<KafkaFrame> frame_;
  std::deque<std::shared_ptr<Slot>> slots_;
  bool reading_paused_ = false;
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace rdmq::broker::internal
