// The ACL RPCs (docs/protocol.md, "ACLs"): CreateAcls, DeleteAcls, ListAcls, on the worker pool
// (each change is fdatasync'ed in the metadata store before it is answered). After a change the
// authorizer takes the new bindings and `changed` runs: the broker's revocation sweep, which ends
// the leases and read grants the bindings no longer allow.
#pragma once

#include <functional>

#include "authorizer.h"
#include "cluster_member.h"
#include "rdmq/common/status.h"
#include "rdmq/metadata/acl.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/acl_messages.h"
#include "rdmq/rpc/server.h"

namespace rdmq::broker::internal {

// A binding off the wire (names parsed, any case; INVALID_ACL naming the choices) and back.
Result<metadata::AclBinding> FromWire(const protocol::AclEntry& e);
protocol::AclEntry ToWire(const metadata::AclBinding& b);

class AclHandlers {
 public:
  // `cluster`: nullptr on a broker on its own; in a cluster the bindings are the cluster's
  // (ClusterMember::ChangeAcls).
  AclHandlers(metadata::MetadataStore& meta, Authorizer& authz, std::function<void()> changed,
              ClusterMember* cluster)
      : meta_(meta), authz_(authz), changed_(std::move(changed)), cluster_(cluster) {}
  Status Register(rpc::Server& server);

  // Every binding is checked before any is stored or removed (one bad entry changes nothing).
  Result<protocol::AclsResponse> CreateAcls(const protocol::AclsRequest& req);
  Result<protocol::AclsResponse> DeleteAcls(const protocol::AclsRequest& req);
  protocol::ListAclsResponse ListAcls() const;

 private:
  Result<protocol::AclsResponse> Change(const protocol::AclsRequest& req, bool add);

  metadata::MetadataStore& meta_;
  Authorizer& authz_;
  std::function<void()> changed_;
  ClusterMember* cluster_;
};

}  // namespace rdmq::broker::internal
