// The network side of the Kafka listener, shared by the connection and the request handlers:
// a Frame (one request's bytes, kept alive while any handler still reads them) and a Reply (one
// response as an ordered list of byte chunks, plus whatever keeps those chunks alive: the
// encoder's buffers, pins on log segments whose batches a Fetch response hands out in place).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rdmq::broker::internal {

struct KafkaSession;  // session.h

struct KafkaFrame {
  std::vector<std::byte> bytes;           // the request after its 4-byte size prefix
  std::string peer;                       // host:port of the client, for logs and DescribeGroups
  std::shared_ptr<KafkaSession> session;  // the connection's (SASL login state)
};

struct KafkaReply {
  // The response, size prefix included, in order.
  std::vector<std::span<const std::byte>> chunks = {};
  std::shared_ptr<const void> keep = nullptr;  // keeps every chunk valid until the reply is written
  bool none = false;                           // the request gets no response (Produce with acks=0)
  bool close = false;                          // close the connection once the replies before it are out
  bool close_after = false;                    // write this reply, then close (a failed SASL login)
};

// Completes one request's reply slot; callable from any thread, once.
using KafkaRespond = std::function<void(KafkaReply)>;

// One request as read off a connection, and where its reply goes.
struct KafkaRequest {
  std::shared_ptr<const KafkaFrame> frame;
  KafkaRespond respond;
};

// What a connection hands every frame to, on one of the listener's threads. `respond` must be
// called exactly once, now or later from any thread; replies go out in request order.
class KafkaRequestHandler {
 public:
  virtual ~KafkaRequestHandler() = default;
  virtual void Handle(std::shared_ptr<const KafkaFrame> frame, KafkaRespond respond) = 0;
  // Requests that arrived together (a client pipelining them), in order. A handler may serve
  // them together (the Kafka front door appends consecutive Produce requests in one commit);
  // by default each goes to Handle in turn.
  virtual void HandleBatch(std::vector<KafkaRequest> requests) {
    for (KafkaRequest& r : requests) Handle(std::move(r.frame), std::move(r.respond));
  }
};

}  // namespace rdmq::broker::internal
