// SaslHandshake and SaslAuthenticate: a Kafka client logs in as a user of the metadata store
// (docs/security.md, "Authentication"). SCRAM-SHA-256/512 run auth::ScramServer over the tokens;
// PLAIN (only over TLS, config.cc checks) checks the password against the user's SCRAM secret.
// A failed login is answered with SASL_AUTHENTICATION_FAILED and the connection is closed; the
// message is the same for an unknown user and a wrong password.
#include "rdmq/kafka/sasl.h"

#include <optional>

#include "broker/kafka/front_door.h"
#include "broker/kafka/session.h"
#include "broker/stored_credentials.h"
#include "rdmq/auth/scram.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"

namespace rdmq::broker::internal {
namespace {

using kafka::ErrorCode;

// PLAIN: the password checked against one of the user's SCRAM secrets. An unknown user costs the
// same key derivation as a known one, so timing does not tell them apart.
bool CheckPlain(const metadata::MetadataStore& meta, const auth::PlainCredentials& p) {
  static const auth::ScramCredential kDummy =
      *auth::MakeScramCredential(auth::ScramHash::kSha256, "no such user", auth::kMinScramIterations);
  const auto user = meta.GetUser(p.user);
  if (user) {
    for (const auto hash : {auth::ScramHash::kSha256, auth::ScramHash::kSha512}) {
      if (auto c = CredentialOf(*user, auth::MechanismName(hash)))
        return auth::CheckPassword(hash, *c, p.password);
    }
  }
  (void)auth::CheckPassword(auth::ScramHash::kSha256, kDummy, p.password);
  return false;
}

}  // namespace

bool KafkaFrontDoor::Authenticated(const KafkaFrame& frame) const {
  if (!d_.cfg->KafkaSasl()) return true;
  KafkaSession* s = frame.session.get();
  if (s == nullptr || !s->authenticated) return false;
  // A user deleted since this connection last looked: is it still there? (One load per request
  // otherwise.)
  const uint64_t deleted = d_.users_deleted != nullptr ? d_.users_deleted->load() : 0;
  if (s->users_deleted_seen != deleted) {
    s->users_deleted_seen = deleted;
    if (!d_.meta->GetUser(s->user)) {
      RDMQ_LOG(kInfo, "kafka", "the connection's user was deleted; it is logged out")
          .kv("peer", frame.peer)
          .kv("user", s->user);
      s->authenticated = false;
      return false;
    }
  }
  return true;
}

void KafkaFrontDoor::SaslHandshake(const KafkaCall& call, Reader& r) {
  kafka::SaslHandshakeRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::SaslHandshakeResponse resp;
  KafkaSession* session = call.frame->session.get();
  if (!d_.cfg->KafkaSasl() || session == nullptr || !session->mechanism.empty()) {
    // Not a SASL listener, or a second handshake on this connection.
    resp.error_code = ErrorCode::kIllegalSaslState;
    return Reply(call, resp);
  }
  resp.mechanisms = d_.cfg->SaslMechanisms();
  bool enabled = false;
  for (const auto& m : resp.mechanisms) enabled = enabled || m == req.mechanism;
  if (!enabled) {
    resp.error_code = ErrorCode::kUnsupportedSaslMechanism;
    RDMQ_LOG(kInfo, "kafka", "SASL mechanism not enabled")
        .kv("peer", call.frame->peer)
        .kv("mechanism", req.mechanism)
        .kv("enabled", d_.cfg->sasl_mechanisms);
    return Reply(call, resp);
  }
  session->mechanism = std::string(req.mechanism);
  session->raw_tokens = call.header.api_version == 0;  // v0: bare token frames follow
  Reply(call, resp);
}

Result<std::string> KafkaFrontDoor::SaslStep(KafkaSession& session, std::string_view token) const {
  const std::string failed =
      "Authentication failed: invalid credentials with SASL mechanism " + session.mechanism;
  std::string answer;
  if (const auto hash = auth::ScramHashOf(session.mechanism)) {
    if (!session.scram) {
      session.scram = std::make_unique<auth::ScramServer>(*hash, StoreLookup(*d_.meta, session.mechanism));
    }
    auto step = session.scram->Step(token);
    if (!step.ok()) {
      return Status(Errc::kPermissionDenied,
                    step.status().is(Errc::kPermissionDenied) ? failed : step.status().ToString());
    }
    answer = std::move(*step);
    if (session.scram->done()) {
      session.user = session.scram->user();
      session.authenticated = true;
      session.scram.reset();
    }
    return answer;
  }
  auto plain = auth::ParsePlain(token);
  if (!plain.ok()) return Status(Errc::kPermissionDenied, plain.status().ToString());
  if (!CheckPlain(*d_.meta, *plain)) return Status(Errc::kPermissionDenied, failed);
  session.user = plain->user;
  session.authenticated = true;
  return answer;
}

void KafkaFrontDoor::LogLogin(const KafkaSession& session, const std::string& peer, const std::string& client,
                              const Status& failure) const {
  if (!failure.ok()) {
    RDMQ_LOG(kInfo, "kafka", "SASL authentication failed; closing the connection")
        .kv("peer", peer)
        .kv("mechanism", session.mechanism)
        .kv("client", client)
        .kv("why", failure.context());
  } else if (session.authenticated) {
    RDMQ_LOG(kInfo, "kafka", "client authenticated")
        .kv("peer", peer)
        .kv("user", session.user)
        .kv("mechanism", session.mechanism)
        .kv("client", client);
  }
}

void KafkaFrontDoor::SaslAuthenticate(const KafkaCall& call, Reader& r) {
  kafka::SaslAuthenticateRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  KafkaSession* session = call.frame->session.get();
  kafka::SaslAuthenticateResponse resp;
  Result<std::string> answer = std::string();
  if (session == nullptr || session->mechanism.empty() || session->authenticated || session->raw_tokens) {
    resp.error_code = ErrorCode::kIllegalSaslState;
    answer = Status(Errc::kPermissionDenied, "SaslAuthenticate without a SaslHandshake v1 before it");
  } else {
    answer = SaslStep(*session, std::string_view(reinterpret_cast<const char*>(req.auth_bytes.data()),
                                                 req.auth_bytes.size()));
    resp.error_code = answer.ok() ? ErrorCode::kNone : ErrorCode::kSaslAuthenticationFailed;
  }
  if (session != nullptr) LogLogin(*session, call.frame->peer, call.client_id(), answer.status());
  if (!answer.ok()) {
    // Answered with the reason, then the connection closes.
    resp.error_message = std::string(answer.status().context());
    return Reply(call, resp, nullptr, /*close_after=*/true);
  }
  // The answer must outlive the reply: it goes with it.
  auto keep = std::make_shared<std::string>(std::move(*answer));
  resp.auth_bytes = kafka::ByteSpan(reinterpret_cast<const std::byte*>(keep->data()), keep->size());
  Reply(call, resp, keep);
}

void KafkaFrontDoor::RawSaslToken(const KafkaFrame& frame, const KafkaRespond& respond) {
  KafkaSession& session = *frame.session;
  auto answer = SaslStep(
      session, std::string_view(reinterpret_cast<const char*>(frame.bytes.data()), frame.bytes.size()));
  LogLogin(session, frame.peer, "", answer.status());
  if (!answer.ok()) return respond(KafkaReply{.close = true});
  if (session.authenticated) session.raw_tokens = false;
  auto keep = std::make_shared<std::string>(4 + answer->size(), '\0');
  coding::StoreBE<int32_t>(reinterpret_cast<std::byte*>(keep->data()), static_cast<int32_t>(answer->size()));
  keep->replace(4, answer->size(), *answer);
  KafkaReply reply;
  reply.chunks.emplace_back(reinterpret_cast<const std::byte*>(keep->data()), keep->size());
  reply.keep = std::move(keep);
  respond(std::move(reply));
}

}  // namespace rdmq::broker::internal
