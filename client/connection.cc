#include "rdmq/client/connection.h"

#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/data_plane.h"

namespace rdmq::client {

Result<fabric::Provider> ProviderOfAddress(std::string_view a) {
  if (a.starts_with("unix:")) return fabric::Provider::kShm;
  if (a.starts_with("tcp:")) return fabric::Provider::kTcp;
  if (a.starts_with("verbs:")) return fabric::Provider::kVerbs;
  if (!a.empty() && a.find(':') == std::string_view::npos) return fabric::Provider::kShm;  // a path
  return Status(Errc::kInvalidArgument, "broker address '" + std::string(a) +
                                            "': expected unix:/path/to/rdmq.sock, tcp:host:port or "
                                            "verbs:host:port");
}

std::string NormalizeAddress(std::string_view a) {
  if (!a.empty() && a.find(':') == std::string_view::npos) return "unix:" + std::string(a);
  return std::string(a);
}

Result<std::unique_ptr<Connection>> Connection::Open(const ClientOptions& client,
                                                     const ConnectionOptions& opts) {
  std::unique_ptr<Connection> c(new Connection());
  c->options_ = client;
  c->address_ = NormalizeAddress(client.ResolvedBootstrap());
  RDMQ_ASSIGN_OR_RETURN(c->provider_, ProviderOfAddress(c->address_));

  fabric::FabricOptions fo;
  fo.provider = c->provider_;
  fo.device = client.device;
  auto fab = fabric::Fabric::Open(fo);
  if (!fab.ok())
    return fab.status().WithContext("open the " + std::string(fabric::ProviderName(fo.provider)) + " fabric");
  c->fabric_ = std::move(*fab);

  rpc::ClientOptions ro;
  ro.channels = opts.rpc_channels;
  ro.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::min<std::chrono::milliseconds>(client.request_timeout, std::chrono::milliseconds(10000)));
  auto rpc = rpc::Client::Connect(*c->fabric_, c->address_, ro);
  if (!rpc.ok()) {
    return Status(Errc::kUnavailable, "cannot reach the rdmq broker at " + c->address_ + ": " +
                                          rpc.status().ToString() + " (is rdmq-broker running there?)");
  }
  c->rpc_ = std::move(*rpc);

  protocol::HelloRequest hello;
  hello.client_name = client.client_name;
  RDMQ_ASSIGN_OR_RETURN(c->hello_, (c->Call<protocol::HelloResponse>(protocol::Api::kHello, hello)));
  if (c->hello_.provider != static_cast<uint8_t>(c->provider_)) {
    return Status(Errc::kUnsupported, "the broker at " + c->address_ +
                                          " serves its data over another fabric (" +
                                          std::to_string(c->hello_.provider) + ")");
  }
  if (!opts.data_endpoint) return c;

  RDMQ_ASSIGN_OR_RETURN(c->send_cq_, c->fabric_->CreateCompletionQueue(opts.cq_depth));
  RDMQ_ASSIGN_OR_RETURN(c->recv_cq_, c->fabric_->CreateCompletionQueue(opts.cq_depth));
  fabric::EndpointOptions eo;
  eo.send_cq = c->send_cq_.get();
  eo.recv_cq = c->recv_cq_.get();
  eo.max_send_wr = opts.max_send_wr;
  eo.max_recv_wr = opts.max_recv_wr;
  eo.connect_timeout = ro.connect_timeout;
  auto ep = c->fabric_->Connect(c->hello_.data_address, eo);
  if (!ep.ok()) {
    return ep.status().WithContext("connect to the broker's data address " + c->hello_.data_address);
  }
  c->data_ = std::move(*ep);
  std::byte id[protocol::kDataHelloSize];
  coding::StoreLE<uint64_t>(id, c->hello_.client_id);
  RDMQ_RETURN_IF_ERROR(c->data_->SendControl(id));
  auto reply = c->data_->RecvControl(client.request_timeout);
  if (!reply.ok())
    return reply.status().WithContext("data endpoint handshake with " + c->hello_.data_address);
  coding::Reader r(std::as_bytes(std::span(reply->data(), reply->size())));
  protocol::ResponseHeader h;
  if (!protocol::DecodeFrom(&r, &h).ok()) {
    return Status(Errc::kCorruption,
                  "data endpoint handshake with " + c->hello_.data_address + ": malformed reply");
  }
  if (h.error != 0) return Status(static_cast<protocol::WireError>(h.error), h.message);
  return c;
}

Connection::~Connection() = default;

Result<std::string> Connection::CallRaw(protocol::Api api, std::string_view request) const {
  auto r = rpc_->Call(static_cast<uint16_t>(api), request, options_.request_timeout);
  if (!r.ok()) {
    return r.status().WithContext(std::string(protocol::ApiName(api)) + " to " + address_);
  }
  return r;
}

Status Connection::CallAsync(protocol::Api api, std::string_view request, rpc::Client::Callback done) const {
  return rpc_->CallAsync(static_cast<uint16_t>(api), std::as_bytes(std::span(request.data(), request.size())),
                         options_.request_timeout, std::move(done));
}

bool Connection::connected() const {
  if (!rpc_ || !rpc_->connected()) return false;
  return data_ == nullptr || data_->connected();
}

}  // namespace rdmq::client
