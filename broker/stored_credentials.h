// What both front doors' logins look up: a user's SCRAM credential for one mechanism, from the
// metadata store (the Kafka listener's SaslAuthenticate, kafka/sasl.cc; the control path's,
// rpc_login.cc).
#pragma once

#include <optional>
#include <string>

#include "rdmq/auth/scram.h"
#include "rdmq/metadata/store.h"

namespace rdmq::broker::internal {

// `user`'s secret for `mechanism` as auth::ScramCredential, or nullopt when it has none.
std::optional<auth::ScramCredential> CredentialOf(const metadata::UserInfo& user,
                                                  const std::string& mechanism);
// An auth::ScramServer lookup reading `meta` (which must outlive it) for `mechanism`.
auth::ScramServer::Lookup StoreLookup(const metadata::MetadataStore& meta, std::string mechanism);

}  // namespace rdmq::broker::internal
