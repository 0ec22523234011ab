#include "rpc_login.h"

#include <optional>
#include <utility>

#include "rdmq/common/log.h"
#include "rpc_handler.h"
#include "stored_credentials.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

namespace {

// The rpc::Server the other handler families register through: each handler is wrapped in the
// login check. Everything else is the real server's.
class GatedServer final : public rpc::Server {
 public:
  GatedServer(rpc::Server& inner, const SessionTable& sessions) : inner_(inner), sessions_(sessions) {}

  Status RegisterHandler(uint16_t id, rpc::Handler fn, rpc::RunOn where) override {
    if (id == static_cast<uint16_t>(Api::kHello)) return inner_.RegisterHandler(id, std::move(fn), where);
    return inner_.RegisterHandler(
        id,
        [&sessions = sessions_, fn = std::move(fn)](const rpc::RequestContext& ctx,
                                                    std::span<const std::byte> in,
                                                    rpc::ResponseBuffer& resp) -> Status {
          const auto s = sessions.Find(ctx.client_id);
          if (!s || !s->logged_in.load()) {
            resp.Append(protocol::EncodeError(
                WireError::kAuthenticationRequired,
                std::string(protocol::ApiName(static_cast<Api>(ctx.handler_id))) +
                    ": this broker serves logged-in clients only (Hello, then SaslAuthenticate; set "
                    "sasl.username and sasl.password)"));
            return Status::Ok();
          }
          return fn(ctx, in, resp);
        },
        where);
  }
  Status Start() override { return inner_.Start(); }
  void Stop() override { inner_.Stop(); }
  void OnDisconnect(std::function<void(uint64_t)> fn) override { inner_.OnDisconnect(std::move(fn)); }
  void Disconnect(uint64_t client_id) override { inner_.Disconnect(client_id); }
  void SetMaxActiveChannels(uint32_t n) override { inner_.SetMaxActiveChannels(n); }
  Stats stats() const override { return inner_.stats(); }
  size_t clients() const override { return inner_.clients(); }

 private:
  rpc::Server& inner_;
  const SessionTable& sessions_;
};

}  // namespace

std::unique_ptr<rpc::Server> RpcLogin::Gate(rpc::Server& server) const {
  if (!required()) return nullptr;
  return std::make_unique<GatedServer>(server, sessions_);
}

Status RpcLogin::Register(rpc::Server& server) {
  return Serve<protocol::SaslAuthenticateRequest>(
      server, Api::kSaslAuthenticate, rpc::RunOn::kWorkerPool, Open{},
      [this](const rpc::RequestContext& ctx, const protocol::SaslAuthenticateRequest& r) {
        return Step(ctx.client_id, std::string(ctx.peer), r);
      });
}

void RpcLogin::Forget(uint64_t client_id) {
  MutexLock lock(mu_);
  exchanges_.erase(client_id);
}

Result<protocol::SaslAuthenticateResponse> RpcLogin::Step(uint64_t client_id, const std::string& peer,
                                                          const protocol::SaslAuthenticateRequest& req) {
  const auto session = sessions_.Find(client_id);
  if (!session) return Status(WireError::kAuthenticationFailed, "SaslAuthenticate before Hello");
  if (session->logged_in.load()) return Status(WireError::kAuthenticationFailed, "already logged in");
  bool enabled = false;
  std::string list;
  for (const auto& m : mechanisms_) {
    enabled = enabled || m == req.mechanism;
    list += (list.empty() ? "" : ", ") + m;
  }
  const auto hash = auth::ScramHashOf(req.mechanism);
  if (!enabled || !hash) {
    return Status(WireError::kAuthenticationFailed,
                  "mechanism '" + req.mechanism + "' is not enabled (this broker takes: " +
                      (list.empty() ? std::string("none, it asks for no login") : list) + ")");
  }
  MutexLock lock(mu_);
  auto& x = exchanges_[client_id];
  if (!x) {
    x = std::make_unique<auth::ScramServer>(*hash, StoreLookup(meta_, req.mechanism));
  }
  auto answer = x->Step(req.token);
  if (!answer.ok()) {
    exchanges_.erase(client_id);  // start again from client-first
    RDMQ_LOG(kInfo, "broker", "RPC login failed")
        .kv("client", client_id)
        .kv("peer", peer)
        .kv("name", session->Name())
        .kv("why", answer.status());
    return Status(WireError::kAuthenticationFailed, std::string(answer.status().context()));
  }
  if (x->done()) {
    RDMQ_LOG(kInfo, "broker", "client logged in")
        .kv("client", client_id)
        .kv("peer", peer)
        .kv("name", session->Name())
        .kv("user", x->user())
        .kv("mechanism", req.mechanism);
    session->SetUser(x->user());
    session->logged_in.store(true);
    exchanges_.erase(client_id);
  }
  return protocol::SaslAuthenticateResponse{std::move(*answer)};
}

}  // namespace rdmq::broker::internal
