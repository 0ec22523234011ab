#include "data_acceptor.h"

#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using protocol::WireError;

void DataAcceptor::Loop() {
  fabric::EndpointOptions eo;
  eo.send_cq = &send_cq_;
  eo.recv_cq = &recv_cq_;
  eo.max_send_wr = 4096;
  eo.max_recv_wr = recv_depth_;
  while (accepting_.load(std::memory_order_acquire)) {
    auto ep = fabric_.Accept(eo, std::chrono::milliseconds(100));
    if (!ep.ok()) {
      if (!ep.status().is(Errc::kTimeout)) {
        RDMQ_LOG(kWarn, "broker", "accepting a data endpoint failed").kv("error", ep.status());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;
    }
    Handshake(std::move(*ep));
  }
}

void DataAcceptor::Handshake(std::unique_ptr<fabric::Endpoint> e) {
  auto reply = [&](WireError err, const std::string& msg) {
    const std::string r = err == WireError::kOk_ ? protocol::Encode(protocol::ResponseHeader{})
                                                 : protocol::EncodeError(err, msg);
    (void)e->SendControl(std::as_bytes(std::span(r.data(), r.size())));
  };
  auto hello = e->RecvControl(std::chrono::seconds(5));
  if (!hello.ok() || hello->size() != protocol::kDataHelloSize) {
    RDMQ_LOG(kWarn, "broker", "data endpoint without a valid handshake dropped")
        .kv("peer", e->peer())
        .kv("error", hello.ok() ? Status(Errc::kCorruption, std::to_string(hello->size()) + " bytes")
                                : hello.status());
    if (hello.ok()) {
      reply(WireError::kInvalidRequest,
            "the data endpoint handshake is the client id and data token (16 bytes)");
    }
    return;
  }
  const uint64_t client_id = coding::LoadLE<uint64_t>(hello->data());
  const uint64_t token = coding::LoadLE<uint64_t>(hello->data() + 8);
  std::shared_ptr<Session> s = sessions_.Find(client_id);
  if (!s || s->data_token != token) {
    reply(WireError::kInvalidRequest,
          "no client " + std::to_string(client_id) + " said Hello with this token");
    return;
  }
  if (!s->logged_in.load()) {
    reply(WireError::kAuthenticationRequired,
          "log in (SaslAuthenticate) before connecting the data endpoint");
    return;
  }
  {
    MutexLock slock(s->mu);
    if (s->ep || s->closed) {
      reply(WireError::kInvalidRequest,
            "client " + std::to_string(client_id) + " already has a data endpoint");
      return;
    }
    std::vector<fabric::RecvRequest> rr(recv_depth_);
    if (Status st = e->PostRecv(rr); !st.ok()) {
      reply(WireError::kUnavailable, "cannot post receives: " + st.ToString());
      return;
    }
    // Known by its endpoint before the client hears OK: its first immediate may follow at
    // once, and the commit poller finds the session by endpoint.
    sessions_.BindEndpoint(s, e->id());
    reply(WireError::kOk_, "");
    s->ep = std::move(e);
  }
  RDMQ_LOG(kDebug, "broker", "data endpoint bound").kv("client", client_id).kv("name", s->Name());
}

}  // namespace rdmq::broker::internal
