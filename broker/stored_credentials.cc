#include "stored_credentials.h"

#include <utility>

namespace rdmq::broker::internal {

std::optional<auth::ScramCredential> CredentialOf(const metadata::UserInfo& user,
                                                  const std::string& mechanism) {
  const auto it = user.scram.find(mechanism);
  if (it == user.scram.end()) return std::nullopt;
  return auth::ScramCredential{it->second.salt, it->second.iterations, it->second.stored_key,
                               it->second.server_key};
}

auth::ScramServer::Lookup StoreLookup(const metadata::MetadataStore& meta, std::string mechanism) {
  return [&meta,
          mechanism = std::move(mechanism)](const std::string& name) -> std::optional<auth::ScramCredential> {
    const auto user = meta.GetUser(name);
    return user ? CredentialOf(*user, mechanism) : std::nullopt;
  };
}

}  // namespace rdmq::broker::internal
