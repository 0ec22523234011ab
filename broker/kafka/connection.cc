#include "broker/kafka/connection.h"

#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

namespace asio = boost::asio;

KafkaConnection::KafkaConnection(asio::ip::tcp::socket socket, KafkaRequestHandler& handler,
                                 uint64_t max_request)
    : socket_(std::move(socket)), handler_(handler), max_request_(max_request) {
  boost::system::error_code ec;
  const auto ep = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("unknown") : ep.address().to_string() + ":" + std::to_string(ep.port());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

void KafkaConnection::Start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->ReadSize(); });
}

void KafkaConnection::Close() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->closed_) return;
    self->closed_ = true;
    boost::system::error_code ec;
    self->socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    self->socket_.close(ec);
  });
}

void KafkaConnection::Fail(const char* what, const boost::system::error_code& ec) {
  if (!closed_ && ec != asio::error::eof && ec != asio::error::operation_aborted &&
      ec != asio::error::connection_reset) {
    RDMQ_LOG(kDebug, "kafka", what).kv("peer", peer_).kv("error", ec.message());
  }
  closed_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void KafkaConnection::ReadSize() {
  if (closed_) return;
  if (slots_.size() >= kMaxPending) {
    reading_paused_ = true;  // resumed by Flush
    return;
  }
  asio::async_read(socket_, asio::buffer(size_buf_, sizeof size_buf_),
                   [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                     if (ec) return self->Fail("read", ec);
                     const int32_t size = coding::LoadBE<int32_t>(self->size_buf_);
                     if (size <= 0 || static_cast<uint64_t>(size) > self->max_request_) {
                       RDMQ_LOG(kWarn, "kafka", "request size out of range; closing the connection")
                           .kv("peer", self->peer_)
                           .kv("size", static_cast<int64_t>(size))
                           .kv("max", self->max_request_);
                       return self->Fail("size", asio::error::message_size);
                     }
                     self->ReadBody(static_cast<uint32_t>(size));
                   });
}

void KafkaConnection::ReadBody(uint32_t size) {
  frame_ = std::make_shared<KafkaFrame>();
  frame_->bytes.resize(size);
  frame_->peer = peer_;
  asio::async_read(socket_, asio::buffer(frame_->bytes.data(), size),
                   [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                     if (ec) return self->Fail("read", ec);
                     self->Dispatch();
                   });
}

void KafkaConnection::Dispatch() {
  auto slot = std::make_shared<Slot>();
  slots_.push_back(slot);
  std::shared_ptr<const KafkaFrame> frame = std::move(frame_);
  // The reply may come back on any thread, now or later: it is handed to the strand.
  handler_.Handle(std::move(frame), [self = shared_from_this(), slot](KafkaReply reply) mutable {
    asio::post(self->socket_.get_executor(),
               [self, slot = std::move(slot), reply = std::move(reply)]() mutable {
                 self->Complete(slot, std::move(reply));
               });
  });
  ReadSize();
}

void KafkaConnection::Complete(const std::shared_ptr<Slot>& slot, KafkaReply reply) {
  slot->reply = std::move(reply);
  slot->ready = true;
  Flush();
}

void KafkaConnection::Flush() {
  while (!writing_ && !closed_ && !slots_.empty() && slots_.front()->ready) {
    std::shared_ptr<Slot> front = slots_.front();
    if (front->reply.close) {
      Fail("close", asio::error::operation_aborted);
      return;
    }
    if (front->reply.none) {
      slots_.pop_front();
      continue;
    }
    std::vector<asio::const_buffer> bufs;
    bufs.reserve(front->reply.chunks.size());
    for (const auto& c : front->reply.chunks) bufs.emplace_back(c.data(), c.size());
    writing_ = true;
    asio::async_write(socket_, bufs,
                      [self = shared_from_this(), front](const boost::system::error_code& ec, size_t) {
                        self->writing_ = false;
                        if (ec) return self->Fail("write", ec);
                        self->slots_.pop_front();
                        self->Flush();
                      });
    return;
  }
  if (reading_paused_ && !closed_ && slots_.size() < kMaxPending) {
    reading_paused_ = false;
    ReadSize();
  }
}

}  // namespace rdmq::broker::internal
