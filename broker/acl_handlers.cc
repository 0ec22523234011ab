#include "acl_handlers.h"

#include <utility>
#include <vector>

#include "meta_errors.h"
#include "rdmq/common/log.h"
#include "rpc_handler.h"

namespace rdmq::broker::internal {

using metadata::AclOperation;
using protocol::Api;

Result<metadata::AclBinding> FromWire(const protocol::AclEntry& e) {
  metadata::AclBinding b;
  b.principal = e.principal;
  b.resource_name = e.resource_name;
  auto parsed = [&]() -> Status {
    RDMQ_ASSIGN_OR_RETURN(b.permission, metadata::ParseAclPermission(e.permission));
    RDMQ_ASSIGN_OR_RETURN(b.operation, metadata::ParseAclOperation(e.operation));
    RDMQ_ASSIGN_OR_RETURN(b.resource_type, metadata::ParseAclResourceType(e.resource_type));
    RDMQ_ASSIGN_OR_RETURN(b.pattern_type, metadata::ParseAclPatternType(e.pattern_type));
    return metadata::ValidateAcl(b);
  }();
  if (!parsed.ok()) return MetadataToWire(parsed);
  return b;
}

protocol::AclEntry ToWire(const metadata::AclBinding& b) {
  return protocol::AclEntry{b.principal,
                            metadata::Name(b.permission),
                            metadata::Name(b.operation),
                            metadata::Name(b.resource_type),
                            metadata::Name(b.pattern_type),
                            b.resource_name};
}

Status AclHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  RDMQ_RETURN_IF_ERROR(
      Serve<protocol::AclsRequest>(server, Api::kCreateAcls, kPool, authz_.OnCluster(AclOperation::kAlter),
                                   [this](Ctx, const protocol::AclsRequest& r) { return CreateAcls(r); }));
  RDMQ_RETURN_IF_ERROR(
      Serve<protocol::AclsRequest>(server, Api::kDeleteAcls, kPool, authz_.OnCluster(AclOperation::kAlter),
                                   [this](Ctx, const protocol::AclsRequest& r) { return DeleteAcls(r); }));
  return Serve<protocol::Empty>(
      server, Api::kListAcls, kPool, authz_.OnCluster(AclOperation::kDescribe),
      [this](Ctx, const protocol::Empty&) -> Result<protocol::ListAclsResponse> { return ListAcls(); });
}

Result<protocol::AclsResponse> AclHandlers::CreateAcls(const protocol::AclsRequest& req) {
  return Change(req, true);
}

Result<protocol::AclsResponse> AclHandlers::DeleteAcls(const protocol::AclsRequest& req) {
  return Change(req, false);
}

Result<protocol::AclsResponse> AclHandlers::Change(const protocol::AclsRequest& req, bool add) {
  std::vector<metadata::AclBinding> bindings;
  for (const protocol::AclEntry& e : req.acls) {
    RDMQ_ASSIGN_OR_RETURN(metadata::AclBinding b, FromWire(e));
    bindings.push_back(std::move(b));
  }
  protocol::AclsResponse r;
  Status failed;
  if (cluster_ != nullptr) {
    // Every binding is valid (FromWire checked): the cluster's list changes in one write.
    auto changed = cluster_->ChangeAcls(bindings, add);
    if (!changed.ok()) return MetadataToWire(changed.status());
    r.changed = *changed;
    for (const metadata::AclBinding& b : bindings)
      RDMQ_LOG(kInfo, "broker", add ? "ACL added" : "ACL removed").kv("acl", metadata::Describe(b));
    bindings.clear();
  }
  for (const metadata::AclBinding& b : bindings) {
    Result<bool> done = add ? meta_.AddAcl(b) : meta_.RemoveAcl(b);
    if (!done.ok()) {
      failed = MetadataToWire(done.status());
      break;
    }
    if (*done) {
      ++r.changed;
      RDMQ_LOG(kInfo, "broker", add ? "ACL added" : "ACL removed").kv("acl", metadata::Describe(b));
    }
  }
  // What was stored before a failure stays stored: take it in either way.
  if (r.changed != 0) {
    authz_.Reload();
    changed_();
  }
  RDMQ_RETURN_IF_ERROR(failed);
  return r;
}

protocol::ListAclsResponse AclHandlers::ListAcls() const {
  protocol::ListAclsResponse r;
  for (const metadata::AclBinding& b : meta_.ListAcls()) r.acls.push_back(ToWire(b));
  return r;
}

}  // namespace rdmq::broker::internal
