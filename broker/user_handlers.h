// The SASL user RPCs (docs/protocol.md, "Users"): CreateUser, AlterUser, DeleteUser, ListUsers,
// on the worker pool (each change is fdatasync'ed in the metadata store before it is answered).
// The requests carry SCRAM secrets the client derived, never a password; ListUsers answers names
// and mechanisms only. Changes are logged at INFO with the user's name, never a secret. A deleted
// user's connections are cut off (`deleted`, the broker's).
#pragma once

#include <functional>
#include <string>

#include "authorizer.h"
#include "cluster_member.h"
#include "rdmq/common/status.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/user_messages.h"
#include "rdmq/rpc/server.h"

namespace rdmq::broker::internal {

class UserHandlers {
 public:
  // `cluster`: nullptr on a broker on its own; in a cluster the users are the cluster's
  // (ClusterMember::CreateUser and the rest).
  UserHandlers(metadata::MetadataStore& meta, const Authorizer& authz,
               std::function<void(const std::string&)> deleted, ClusterMember* cluster)
      : meta_(meta), authz_(authz), deleted_(std::move(deleted)), cluster_(cluster) {}
  Status Register(rpc::Server& server);

  Status CreateUser(const protocol::UserRequest& req);
  Status AlterUser(const protocol::UserRequest& req);
  Status DeleteUser(const protocol::UserNameRequest& req);
  protocol::ListUsersResponse ListUsers() const;

 private:
  metadata::MetadataStore& meta_;
  const Authorizer& authz_;
  std::function<void(const std::string&)> deleted_;
  ClusterMember* cluster_;
};

}  // namespace rdmq::broker::internal
