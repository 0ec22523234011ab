#include "rdmq/client/connection.h"

#include <cstdlib>
#include <utility>

#include "rdmq/auth/scram.h"
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

Result<fabric::TlsOptions> TlsOptionsOf(const ClientOptions& o, fabric::Provider provider) {
  fabric::TlsOptions t;
  if (!o.Tls()) return t;
  if (provider != fabric::Provider::kTcp) {
    return Status(Errc::kInvalidArgument, "security.protocol=" + o.security_protocol +
                                              ": TLS is for tcp: brokers, not " +
                                              std::string(fabric::ProviderName(provider)) + " ones");
  }
  if (o.ssl_certificate.empty() != o.ssl_key.empty()) {
    return Status(Errc::kInvalidArgument, o.ssl_certificate.empty()
                                              ? "ssl.key.location is set without ssl.certificate.location"
                                              : "ssl.certificate.location is set without ssl.key.location");
  }
  t.enabled = true;
  t.ca = o.ssl_ca;
  t.certificate = o.ssl_certificate;
  t.key = o.ssl_key;
  t.verify_peer = o.ssl_verify;
  t.verify_name = o.ssl_endpoint_identification == "https";
  return t;
}

std::string NormalizeAddress(std::string_view a) {
  if (!a.empty() && a.find(':') == std::string_view::npos) return "unix:" + std::string(a);
  return std::string(a);
}

Result<std::unique_ptr<Connection>> Connection::Open(const ClientOptions& client,
                                                     const ConnectionOptions& opts) {
  std::unique_ptr<Connection> c(new Connection());
  c->options_ = client;
  c->conn_options_ = opts;
  RDMQ_ASSIGN_OR_RETURN(c->servers_, client.BootstrapServers());
  RDMQ_ASSIGN_OR_RETURN(c->provider_, ProviderOfAddress(c->servers_.front()));

  fabric::FabricOptions fo;
  fo.provider = c->provider_;
  fo.device = client.device;
  RDMQ_ASSIGN_OR_RETURN(fo.tls, TlsOptionsOf(client, c->provider_));
  auto fab = fabric::Fabric::Open(fo);
  if (!fab.ok()) {
    return fab.status().WithContext(
        "open the " + std::string(fabric::ProviderName(fo.provider)) + " fabric" +
        (fo.tls.enabled ? " with TLS (ssl.ca.location, ssl.certificate.location, ssl.key.location)" : ""));
  }
  c->fabric_ = std::move(*fab);
  if (opts.data_endpoint) {
    RDMQ_ASSIGN_OR_RETURN(c->send_cq_, c->fabric_->CreateCompletionQueue(opts.cq_depth));
    RDMQ_ASSIGN_OR_RETURN(c->recv_cq_, c->fabric_->CreateCompletionQueue(opts.cq_depth));
  }
  RDMQ_ASSIGN_OR_RETURN(auto link, c->Dial());
  c->Install(std::move(link));
  return c;
}

Result<std::unique_ptr<Connection::Link>> Connection::Dial() const {
  Status last;
  std::string tried;
  for (const std::string& address : servers_) {
    auto link = DialAt(address);
    if (link.ok() || servers_.size() == 1) return link;
    // A broker that answered and refused (another fabric, an error of its own) is as good as
    // absent: the next server may serve.
    last = link.status();
    tried += (tried.empty() ? "" : "; ") + link.status().ToString();
  }
  if (last.is(Errc::kUnavailable))
    return Status(Errc::kUnavailable, "no bootstrap server answered: " + tried);
  return Status(last.code(), "no bootstrap server answered: " + tried);
}

Result<std::unique_ptr<Connection::Link>> Connection::DialAt(const std::string& address) const {
  auto link = std::make_unique<Link>();
  link->address = address;
  rpc::ClientOptions ro;
  ro.channels = conn_options_.rpc_channels;
  ro.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::min<std::chrono::milliseconds>(options_.request_timeout, std::chrono::milliseconds(10000)));
  auto rpc = rpc::Client::Connect(*fabric_, address, ro);
  if (!rpc.ok()) {
    std::string hint = " (is rdmq-broker running there?)";
    if (rpc.status().is(fabric::FabricErrc::kTls)) {
      hint =
          " (security.protocol, ssl.ca.location, ssl.certificate.location, ssl.key.location and "
          "ssl.endpoint.identification.algorithm: docs/security.md)";
    } else if (provider_ == fabric::Provider::kTcp && !options_.Tls() &&
               rpc.status().is(fabric::FabricErrc::kPeerGone)) {
      hint =
          " (a broker with rpc.security.protocol=SSL closes connections without TLS: is "
          "security.protocol=SSL "
          "needed?)";
    }
    return Status(Errc::kUnavailable,
                  "cannot reach the rdmq broker at " + address + ": " + rpc.status().ToString() + hint);
  }
  link->rpc = std::shared_ptr<rpc::Client>(std::move(*rpc));

  protocol::HelloRequest hello;
  hello.client_name = options_.client_name;
  auto raw = link->rpc->Call(static_cast<uint16_t>(protocol::Api::kHello), protocol::Encode(hello),
                             options_.request_timeout);
  if (!raw.ok()) return raw.status().WithContext("Hello to " + address);
  RDMQ_ASSIGN_OR_RETURN(link->hello, protocol::DecodeResponse<protocol::HelloResponse>(
                                         std::as_bytes(std::span(raw->data(), raw->size()))));
  if (link->hello.provider != static_cast<uint8_t>(provider_)) {
    return Status(Errc::kUnsupported, "the broker at " + address + " serves its data over another fabric (" +
                                          std::to_string(link->hello.provider) + ")");
  }
  if (!link->hello.sasl_mechanisms.empty()) RDMQ_RETURN_IF_ERROR(LogIn(*link));
  if (!conn_options_.data_endpoint) return link;

  fabric::EndpointOptions eo;
  eo.send_cq = send_cq_.get();
  eo.recv_cq = recv_cq_.get();
  eo.max_send_wr = conn_options_.max_send_wr;
  eo.max_recv_wr = conn_options_.max_recv_wr;
  eo.connect_timeout = ro.connect_timeout;
  const std::string& data_address = link->hello.data_address;
  auto ep = fabric_->Connect(data_address, eo);
  if (!ep.ok()) return ep.status().WithContext("connect to the broker's data address " + data_address);
  link->data = std::move(*ep);
  std::byte id[protocol::kDataHelloSize];
  coding::StoreLE<uint64_t>(id, link->hello.client_id);
  coding::StoreLE<uint64_t>(id + 8, link->hello.data_token);
  RDMQ_RETURN_IF_ERROR(link->data->SendControl(id));
  auto reply = link->data->RecvControl(options_.request_timeout);
  if (!reply.ok()) return reply.status().WithContext("data endpoint handshake with " + data_address);
  coding::Reader r(std::as_bytes(std::span(reply->data(), reply->size())));
  protocol::ResponseHeader h;
  if (!protocol::DecodeFrom(&r, &h).ok()) {
    return Status(Errc::kCorruption, "data endpoint handshake with " + data_address + ": malformed reply");
  }
  if (h.error != 0) return Status(static_cast<protocol::WireError>(h.error), h.message);
  return link;
}

Status Connection::LogIn(Link& link) const {
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  const std::string user =
      options_.sasl_username.empty() ? env("RDMQ_SASL_USERNAME") : options_.sasl_username;
  const std::string password =
      options_.sasl_password.empty() ? env("RDMQ_SASL_PASSWORD") : options_.sasl_password;
  const std::string& mechanism = options_.sasl_mechanism;
  std::string offered;
  for (const auto& m : link.hello.sasl_mechanisms) offered += (offered.empty() ? "" : ", ") + m;
  const std::string where = "log in to the broker at " + link.address;
  if (user.empty() || password.empty()) {
    return Status(Errc::kPermissionDenied,
                  where + ": it asks for a login (" + offered +
                      "); set sasl.username and sasl.password (or $RDMQ_SASL_USERNAME "
                      "and $RDMQ_SASL_PASSWORD)");
  }
  bool offered_ours = false;
  for (const auto& m : link.hello.sasl_mechanisms) offered_ours = offered_ours || m == mechanism;
  if (!offered_ours) {
    return Status(Errc::kPermissionDenied,
                  where + ": sasl.mechanism " + mechanism + " is not one it takes (" + offered + ")");
  }
  const auto hash = auth::ScramHashOf(mechanism);
  if (!hash) return Status(Errc::kInvalidArgument, where + ": unknown sasl.mechanism " + mechanism);
  auth::ScramClient scram(*hash, user, password);
  const auto step = [&](const std::string& token) -> Result<std::string> {
    auto raw = link.rpc->Call(static_cast<uint16_t>(protocol::Api::kSaslAuthenticate),
                              protocol::Encode(protocol::SaslAuthenticateRequest{mechanism, token}),
                              options_.request_timeout);
    if (!raw.ok()) return raw.status().WithContext(where);
    auto r = protocol::DecodeResponse<protocol::SaslAuthenticateResponse>(
        std::as_bytes(std::span(raw->data(), raw->size())));
    if (!r.ok()) return r.status().WithContext(where + " as " + user);
    return std::move(r->token);
  };
  RDMQ_ASSIGN_OR_RETURN(std::string server_first, step(scram.First()));
  RDMQ_ASSIGN_OR_RETURN(std::string client_final, scram.Final(server_first));
  RDMQ_ASSIGN_OR_RETURN(std::string server_final, step(client_final));
  return scram.Verify(server_final).WithContext(where + ": the broker's proof");
}

void Connection::Install(std::unique_ptr<Link> link) {
  std::shared_ptr<rpc::Client> old_rpc;
  std::unique_ptr<fabric::Endpoint> old_data;
  {
    MutexLock lock(mu_);
    address_ = link->address;
    old_rpc = std::exchange(rpc_, std::move(link->rpc));
    old_data = std::exchange(data_, std::move(link->data));
    hello_ = std::move(link->hello);
    ++generation_;
  }
  // Destroyed here, outside the lock; the old RPC handle once the last Call using it returns.
  old_data.reset();
  old_rpc.reset();
}

Status Connection::Reconnect() {
  RDMQ_ASSIGN_OR_RETURN(auto link, Dial());
  Install(std::move(link));
  return Status::Ok();
}

uint64_t Connection::generation() const {
  MutexLock lock(mu_);
  return generation_;
}

std::string Connection::address() const {
  MutexLock lock(mu_);
  return address_;
}

std::shared_ptr<rpc::Client> Connection::rpc() const {
  MutexLock lock(mu_);
  return rpc_;
}

Connection::~Connection() {
  // The endpoint before the queues it uses (members go in reverse order: data_ is declared last).
  data_.reset();
}

Result<std::string> Connection::CallRaw(protocol::Api api, std::string_view request) const {
  const std::shared_ptr<rpc::Client> rpc = this->rpc();
  auto r = rpc->Call(static_cast<uint16_t>(api), request, options_.request_timeout);
  if (!r.ok()) {
    return r.status().WithContext(std::string(protocol::ApiName(api)) + " to " + address());
  }
  return r;
}

Status Connection::CallAsync(protocol::Api api, std::string_view request, rpc::Client::Callback done) const {
  return rpc()->CallAsync(static_cast<uint16_t>(api),
                          std::as_bytes(std::span(request.data(), request.size())), options_.request_timeout,
                          std::move(done));
}

bool Connection::connected() const {
  MutexLock lock(mu_);
  if (!rpc_ || !rpc_->connected()) return false;
  return data_ == nullptr || data_->connected();
}

}  // namespace rdmq::client
