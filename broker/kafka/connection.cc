#include "broker/kafka/connection.h"

#include <bit>
#include <cstring>

#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

namespace asio = boost::asio;

KafkaConnection::KafkaConnection(KafkaStream stream, KafkaRequestHandler& handler, uint64_t max_request)
    : stream_(std::move(stream)), handler_(handler), max_request_(max_request) {
  boost::system::error_code ec;
  const auto ep = stream_.socket().remote_endpoint(ec);
  peer_ = ec ? std::string("unknown") : ep.address().to_string() + ":" + std::to_string(ep.port());
  stream_.socket().set_option(asio::ip::tcp::no_delay(true), ec);
}

void KafkaConnection::Start() {
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->stream_.async_handshake([self](const boost::system::error_code& ec) {
      if (ec) {
        // An operator wants to see these: a client without TLS, or with a certificate refused.
        RDMQ_LOG(kInfo, "kafka", "TLS handshake failed; connection closed")
            .kv("peer", self->peer_)
            .kv("error", ec.message());
        return self->Fail("handshake", asio::error::operation_aborted);
      }
      // Who the client is for ACLs when it does not log in with SASL (authorizer.h).
      self->session_->cert_user = self->stream_.PeerCommonName();
      self->Read();
    });
  });
}

void KafkaConnection::Close() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->closed_) return;
    self->closed_ = true;
    boost::system::error_code ec;
    self->stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    self->stream_.socket().close(ec);
  });
}

void KafkaConnection::Fail(const char* what, const boost::system::error_code& ec) {
  if (!closed_ && ec != asio::error::eof && ec != asio::error::operation_aborted &&
      ec != asio::error::connection_reset) {
    RDMQ_LOG(kDebug, "kafka", what).kv("peer", peer_).kv("error", ec.message());
  }
  closed_ = true;
  boost::system::error_code ignored;
  stream_.socket().close(ignored);
}

void KafkaConnection::Read() {
  if (closed_) return;
  stream_.async_read_some(asio::buffer(in_.data() + in_len_, in_.size() - in_len_),
                          [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                            if (ec) return self->Fail("read", ec);
                            self->in_len_ += n;
                            self->Parse();
                          });
}

void KafkaConnection::Parse() {
  std::vector<std::shared_ptr<KafkaFrame>> frames;
  std::shared_ptr<KafkaFrame> large;
  size_t pos = 0, have = 0;
  bool paused = false, bad = false;
  while (!closed_) {
    if (slots_.size() + frames.size() >= kMaxPending) {
      paused = true;  // resumed by Flush
      break;
    }
    if (in_len_ - pos < 4) break;
    const int32_t size = coding::LoadBE<int32_t>(in_.data() + pos);
    if (size <= 0 || static_cast<uint64_t>(size) > max_request_) {
      RDMQ_LOG(kWarn, "kafka", "request size out of range; closing the connection")
          .kv("peer", peer_)
          .kv("size", static_cast<int64_t>(size))
          .kv("max", max_request_);
      bad = true;
      break;
    }
    const size_t avail = in_len_ - pos - 4;
    const size_t need = static_cast<size_t>(size) + 4;
    if (avail + 4 < need && need > in_.size() && need <= kMaxReadBuffer) {
      // Larger than the buffer but not large: the buffer grows (once) to hold it.
      in_.resize(std::bit_ceil(need));
    }
    if (avail + 4 < need && need <= in_.size()) break;  // read more
    auto frame = std::make_shared<KafkaFrame>();
    frame->peer = peer_;
    frame->session = session_;
    if (avail >= static_cast<size_t>(size)) {
      frame->bytes.assign(in_.data() + pos + 4, in_.data() + pos + 4 + size);
      frames.push_back(std::move(frame));
      pos += 4 + static_cast<size_t>(size);
      continue;
    }
    // Larger than the buffer: what is here now, and the rest straight into the frame.
    frame->bytes.resize(static_cast<size_t>(size));
    std::memcpy(frame->bytes.data(), in_.data() + pos + 4, avail);
    large = std::move(frame);
    have = avail;
    pos = in_len_;
    break;
  }
  std::memmove(in_.data(), in_.data() + pos, in_len_ - pos);
  in_len_ -= pos;
  if (!frames.empty()) Dispatch(std::move(frames));
  if (bad) return Fail("size", asio::error::message_size);
  if (closed_) return;
  if (large) return ReadRest(std::move(large), have);
  if (paused) {
    reading_paused_ = true;
    return;
  }
  Read();
}

void KafkaConnection::ReadRest(std::shared_ptr<KafkaFrame> frame, size_t have) {
  KafkaFrame& f = *frame;
  asio::async_read(
      stream_, asio::buffer(f.bytes.data() + have, f.bytes.size() - have),
      [self = shared_from_this(), frame = std::move(frame)](const boost::system::error_code& ec, size_t) {
        if (ec) return self->Fail("read", ec);
        self->Dispatch({frame});
        self->Parse();
      });
}

void KafkaConnection::Dispatch(std::vector<std::shared_ptr<KafkaFrame>> frames) {
  std::vector<KafkaRequest> requests;
  requests.reserve(frames.size());
  for (auto& f : frames) {
    auto slot = std::make_shared<Slot>();
    slots_.push_back(slot);
    // The reply may come back on any thread, now or later: it is handed to the strand.
    requests.push_back({std::move(f), [self = shared_from_this(), slot](KafkaReply reply) mutable {
                          asio::post(self->stream_.get_executor(),
                                     [self, slot = std::move(slot), reply = std::move(reply)]() mutable {
                                       self->Complete(slot, std::move(reply));
                                     });
                        }});
  }
  handler_.HandleBatch(std::move(requests));
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
    asio::async_write(stream_, bufs,
                      [self = shared_from_this(), front](const boost::system::error_code& ec, size_t) {
                        self->writing_ = false;
                        if (ec) return self->Fail("write", ec);
                        if (front->reply.close_after)
                          return self->Fail("close", asio::error::operation_aborted);
                        self->slots_.pop_front();
                        self->Flush();
                      });
    return;
  }
  if (reading_paused_ && !closed_ && slots_.size() < kMaxPending) {
    reading_paused_ = false;
    Parse();
  }
}

}  // namespace rdmq::broker::internal
