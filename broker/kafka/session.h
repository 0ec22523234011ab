// KafkaSession: what the Kafka listener knows of one connection beyond its bytes: whether (and
// as whom) the client logged in with SASL (docs/security.md, "Authentication"). The connection
// makes one and every frame it reads points at it.
//
// Threading: a connection's frames reach the front door one after another on the connection's
// strand, and the SASL requests are answered there before the next frame is handled, so the
// fields need no lock. Handlers that complete later (a fetch, a join) must not touch them.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "rdmq/auth/scram.h"

namespace rdmq::broker::internal {

struct KafkaSession {
  std::string mechanism;                     // chosen by SaslHandshake; empty before
  std::unique_ptr<auth::ScramServer> scram;  // the exchange under way (SCRAM mechanisms)
  std::string user;                          // set once authenticated
  bool authenticated = false;
  bool raw_tokens = false;          // a SaslHandshake v0: the tokens come as bare frames until logged in
  std::string cert_user;            // the CN of the client's certificate (TLS), set before the first frame
  uint64_t users_deleted_seen = 0;  // the broker's user-deletion count when the user was last checked

  // Who the connection acts as for ACLs: its SASL login, else its certificate's CN, else
  // ANONYMOUS (authorizer.h).
  std::string_view Principal() const {
    if (authenticated) return user;
    if (!cert_user.empty()) return cert_user;
    return "ANONYMOUS";
  }
};

}  // namespace rdmq::broker::internal
