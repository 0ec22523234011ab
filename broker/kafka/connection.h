// KafkaConnection: one Kafka client's TCP connection (TLS over it with kafka.security.protocol=SSL:
// the handshake comes first, a failed one closes the connection). Reads size-prefixed frames (a size above
// socket.request.max.bytes, or not positive, closes the connection), hands them to the request
// handler, and writes the replies in request order however they complete (Kafka clients pipeline
// requests and match responses by order). At most kMaxPending requests are outstanding: reading
// pauses until replies drain, so a client cannot make the broker buffer without bound.
// Reads go into a buffer (kReadBuffer bytes, grown up to kMaxReadBuffer for larger frames), so
// one read picks up every request a pipelining client has sent meanwhile; the frames found in it
// go to the handler together (HandleBatch). A frame larger than kMaxReadBuffer is read the rest
// of the way straight into its own bytes.
//
// Threading: everything runs on the connection's strand; replies completed on other threads are
// posted to it. The connection lives as long as a read, a write or an unfinished reply holds it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "broker/kafka/asio.h"
#include "broker/kafka/reply.h"
#include "broker/kafka/session.h"
#include "broker/kafka/stream.h"

namespace rdmq::broker::internal {

class KafkaConnection : public std::enable_shared_from_this<KafkaConnection> {
 public:
  static constexpr size_t kMaxPending = 64;
  static constexpr size_t kReadBuffer = 64 << 10;
  static constexpr size_t kMaxReadBuffer = 1 << 20;

  KafkaConnection(KafkaStream stream, KafkaRequestHandler& handler, uint64_t max_request);
  void Start();
  // Closes the socket (from any thread); outstanding replies are dropped.
  void Close();
  const std::string& peer() const { return peer_; }

 private:
  struct Slot {
    bool ready = false;
    KafkaReply reply;
  };
  void Read();
  // Takes the whole frames out of the buffer to the handler, then reads on (or pauses).
  void Parse();
  // The rest of a frame larger than the buffer, `have` bytes of which are in it already.
  void ReadRest(std::shared_ptr<KafkaFrame> frame, size_t have);
  void Dispatch(std::vector<std::shared_ptr<KafkaFrame>> frames);
  void Complete(const std::shared_ptr<Slot>& slot, KafkaReply reply);
  void Flush();
  void Fail(const char* what, const boost::system::error_code& ec);

  KafkaStream stream_;  // its executor is the connection's strand
  KafkaRequestHandler& handler_;
  const uint64_t max_request_;
  std::string peer_;
  const std::shared_ptr<KafkaSession> session_ = std::make_shared<KafkaSession>();
  std::vector<std::byte> in_ = std::vector<std::byte>(kReadBuffer);
  size_t in_len_ = 0;  // bytes read into in_ and not taken yet
  std::deque<std::shared_ptr<Slot>> slots_;
  bool reading_paused_ = false;
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace rdmq::broker::internal
