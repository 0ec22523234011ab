// Authorizer: the ACL decision both front doors ask before they act (docs/security.md,
// "Authorization"). With authorizer.enabled off every request is allowed, as before ACLs
// existed. With it on, a user of super.users may do everything and anyone else only what a
// binding of the metadata store allows (metadata::Authorize: a matching deny wins, else a
// matching allow grants, else refused).
//
// Who asks: the user a client logged in as, or ANONYMOUS when its front door asks for no login
// (Kafka's name for it); a verified client certificate's CN when the client did not log in with
// SASL (on the Kafka listener, and on the tcp control path with rpc.security.protocol=SSL).
//
// Threading: thread-safe. The bindings are an immutable snapshot, replaced by Reload after
// every change; a decision takes a reference to it under a leaf lock and decides without it.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/broker/config.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/metadata/acl.h"
#include "rdmq/metadata/store.h"
#include "rdmq/rpc/server.h"
#include "session.h"

namespace rdmq::broker::internal {

inline constexpr char kAnonymousUser[] = "ANONYMOUS";

// The user name a client acts as: `login`, or ANONYMOUS when it did not log in.
inline std::string_view ActingUser(const std::string& login) {
  return login.empty() ? std::string_view(kAnonymousUser) : std::string_view(login);
}

class Authorizer {
 public:
  // `sessions` tell who a control-path client is (the Kafka listener names its user itself).
  Authorizer(const BrokerConfig& cfg, const metadata::MetadataStore& meta, const SessionTable& sessions);

  bool enabled() const { return enabled_; }
  // Takes the store's bindings again (after CreateAcls or DeleteAcls).
  void Reload() EXCLUDES(mu_);

  bool Allowed(std::string_view user, metadata::AclOperation op, metadata::AclResourceType type,
               std::string_view name) const EXCLUDES(mu_);
  // OK, or TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED naming the user, the operation and the
  // resource.
  Status Check(std::string_view user, metadata::AclOperation op, metadata::AclResourceType type,
               std::string_view name) const EXCLUDES(mu_);
  // InitProducerId (an idempotent producer's id): allowed to a user that some binding lets write
  // some topic (Kafka's rule since KIP-679), else CLUSTER_AUTHORIZATION_FAILED.
  Status CheckIdempotentWrite(std::string_view user) const EXCLUDES(mu_);

  // Creating a topic: Create on the cluster or on the topic (Kafka's rule).
  Status CheckCreateTopic(std::string_view user, std::string_view topic) const EXCLUDES(mu_);

  // The control path: the user of the calling client's session.
  std::string UserOf(uint64_t client_id) const;
  Status Check(const rpc::RequestContext& ctx, metadata::AclOperation op, metadata::AclResourceType type,
               std::string_view name) const {
    return enabled_ ? Check(UserOf(ctx.client_id), op, type, name) : Status::Ok();
  }

  // Rules for Serve (rpc_handler.h): `op` on the topic, group or cluster a request names.
  template <class Request>
  auto OnTopic(metadata::AclOperation op, std::string Request::*name) const {
    return [this, op, name](const rpc::RequestContext& ctx, const Request& r) {
      return Check(ctx, op, metadata::AclResourceType::kTopic, r.*name);
    };
  }
  template <class Request>
  auto OnGroup(metadata::AclOperation op, std::string Request::*name) const {
    return [this, op, name](const rpc::RequestContext& ctx, const Request& r) {
      return Check(ctx, op, metadata::AclResourceType::kGroup, r.*name);
    };
  }
  auto OnCluster(metadata::AclOperation op) const {
    return [this, op](const rpc::RequestContext& ctx, const auto&) {
      return Check(ctx, op, metadata::AclResourceType::kCluster, metadata::kClusterResourceName);
    };
  }

 private:
  std::shared_ptr<const std::vector<metadata::AclBinding>> Snapshot() const EXCLUDES(mu_);
  bool Super(std::string_view user) const { return supers_.count(std::string(user)) != 0; }

  const bool enabled_;
  const std::set<std::string> supers_;
  const metadata::MetadataStore& meta_;
  const SessionTable& sessions_;
  mutable Mutex mu_;  // a leaf
  std::shared_ptr<const std::vector<metadata::AclBinding>> acls_ GUARDED_BY(mu_);
};

}  // namespace rdmq::broker::internal
