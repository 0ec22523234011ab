#include "authorizer.h"

#include <utility>

#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using metadata::AclBinding;
using metadata::AclOperation;
using metadata::AclPermission;
using metadata::AclResourceType;
using protocol::WireError;

namespace {

std::set<std::string> SuperSet(const BrokerConfig& cfg) {
  const std::vector<std::string> v = cfg.SuperUsers();
  return {v.begin(), v.end()};
}

WireError RefusalFor(AclResourceType type) {
  switch (type) {
    case AclResourceType::kTopic:
      return WireError::kTopicAuthorizationFailed;
    case AclResourceType::kGroup:
      return WireError::kGroupAuthorizationFailed;
    case AclResourceType::kCluster:
      break;
  }
  return WireError::kClusterAuthorizationFailed;
}

}  // namespace

Authorizer::Authorizer(const BrokerConfig& cfg, const metadata::MetadataStore& meta,
                       const SessionTable& sessions)
    : enabled_(cfg.authorizer_enabled), supers_(SuperSet(cfg)), meta_(meta), sessions_(sessions) {
  Reload();
}

std::string Authorizer::UserOf(uint64_t client_id) const {
  const std::shared_ptr<Session> s = sessions_.Find(client_id);
  return std::string(ActingUser(s ? s->Principal() : std::string()));
}

void Authorizer::Reload() {
  auto next = std::make_shared<const std::vector<AclBinding>>(meta_.ListAcls());
  MutexLock lock(mu_);
  acls_ = std::move(next);
}

std::shared_ptr<const std::vector<AclBinding>> Authorizer::Snapshot() const {
  MutexLock lock(mu_);
  return acls_;
}

bool Authorizer::Allowed(std::string_view user, AclOperation op, AclResourceType type,
                         std::string_view name) const {
  if (!enabled_ || Super(user)) return true;
  return metadata::Authorize(*Snapshot(), user, type, name, op);
}

Status Authorizer::Check(std::string_view user, AclOperation op, AclResourceType type,
                         std::string_view name) const {
  if (Allowed(user, op, type, name)) return Status::Ok();
  std::string what = type == AclResourceType::kCluster
                         ? std::string("the cluster")
                         : std::string(metadata::Name(type)) + " '" + std::string(name) + "'";
  return Status(RefusalFor(type), "User:" + std::string(user) + " may not " + metadata::Name(op) + " " +
                                      what + " (no ACL allows it: rdmq acl list)");
}

Status Authorizer::CheckCreateTopic(std::string_view user, std::string_view topic) const {
  if (Allowed(user, AclOperation::kCreate, AclResourceType::kCluster, metadata::kClusterResourceName)) {
    return Status::Ok();
  }
  return Check(user, AclOperation::kCreate, AclResourceType::kTopic, topic);
}

Status Authorizer::CheckIdempotentWrite(std::string_view user) const {
  if (!enabled_ || Super(user)) return Status::Ok();
  const auto acls = Snapshot();
  for (const AclBinding& b : *acls) {
    if (b.permission != AclPermission::kAllow || b.resource_type != AclResourceType::kTopic) continue;
    if (b.operation != AclOperation::kWrite && b.operation != AclOperation::kAll) continue;
    // The binding's own resource (a name, or a prefix standing for the names it starts) must
    // be writable by this user: a deny may take back what the allow gave.
    if (metadata::Authorize(*acls, user, AclResourceType::kTopic, b.resource_name, AclOperation::kWrite)) {
      return Status::Ok();
    }
  }
  return Status(WireError::kClusterAuthorizationFailed,
                "User:" + std::string(user) +
                    " may not have a producer id: no ACL lets it write any topic (rdmq acl list)");
}

}  // namespace rdmq::broker::internal
