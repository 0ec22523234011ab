// RpcLogin: SASL on the control path (docs/protocol.md, "SaslAuthenticate"; docs/security.md).
// With rpc.sasl.enabled.mechanisms set, a client logs in after Hello with a SCRAM exchange over
// two SaslAuthenticate calls, as a user of the metadata store; until then every other request is
// answered AUTHENTICATION_REQUIRED (Gate) and the data handshake is refused (Session::logged_in).
// Without it, nothing changes: Hello marks each session logged in.
//
// Threading: SaslAuthenticate runs on the worker pool; a session's exchange is guarded by the
// login's mutex (calls of one client may arrive on several channels).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rdmq/auth/scram.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/mutex.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/server.h"
#include "session.h"

namespace rdmq::broker::internal {

class RpcLogin {
 public:
  RpcLogin(const BrokerConfig& cfg, const metadata::MetadataStore& meta, SessionTable& sessions)
      : mechanisms_(cfg.RpcSaslMechanisms()), meta_(meta), sessions_(sessions) {}

  bool required() const { return !mechanisms_.empty(); }
  const std::vector<std::string>& mechanisms() const { return mechanisms_; }

  // Registers SaslAuthenticate.
  Status Register(rpc::Server& server);
  // A server to register every other handler through: while a login is required, each handler
  // first checks that the calling client has logged in (Hello excepted). `server` must outlive
  // the handlers; the returned object is needed only while registering.
  std::unique_ptr<rpc::Server> Gate(rpc::Server& server) const;
  // The client went away: its unfinished exchange goes too.
  void Forget(uint64_t client_id) EXCLUDES(mu_);

 private:
  Result<protocol::SaslAuthenticateResponse> Step(uint64_t client_id, const std::string& peer,
                                                  const protocol::SaslAuthenticateRequest& req) EXCLUDES(mu_);

  const std::vector<std::string> mechanisms_;
  const metadata::MetadataStore& meta_;
  SessionTable& sessions_;
  Mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<auth::ScramServer>> exchanges_ GUARDED_BY(mu_);
};

}  // namespace rdmq::broker::internal
