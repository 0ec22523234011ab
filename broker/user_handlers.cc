#include "user_handlers.h"

#include "meta_errors.h"
#include "rdmq/common/log.h"
#include "rpc_handler.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

namespace {

// The request as the store's user; a mechanism named twice is refused here, since the store's
// map would keep only one of them.
Result<metadata::UserInfo> ToUser(const protocol::UserRequest& req) {
  metadata::UserInfo u;
  u.name = req.name;
  for (const auto& e : req.secrets) {
    metadata::ScramSecret s{e.salt.bytes, e.iterations, e.stored_key.bytes, e.server_key.bytes};
    if (!u.scram.emplace(e.mechanism, std::move(s)).second) {
      return Status(WireError::kInvalidUser, "user '" + req.name + "': mechanism " + e.mechanism + " twice");
    }
  }
  return u;
}

}  // namespace

Status UserHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  using metadata::AclOperation;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  RDMQ_RETURN_IF_ERROR(Serve<protocol::UserRequest>(
      server, Api::kCreateUser, kPool, authz_.OnCluster(AclOperation::kAlter),
      [this](Ctx, const protocol::UserRequest& r) { return Done(CreateUser(r)); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::UserRequest>(
      server, Api::kAlterUser, kPool, authz_.OnCluster(AclOperation::kAlter),
      [this](Ctx, const protocol::UserRequest& r) { return Done(AlterUser(r)); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::UserNameRequest>(
      server, Api::kDeleteUser, kPool, authz_.OnCluster(AclOperation::kAlter),
      [this](Ctx, const protocol::UserNameRequest& r) { return Done(DeleteUser(r)); }));
  return Serve<protocol::Empty>(
      server, Api::kListUsers, kPool, authz_.OnCluster(AclOperation::kDescribe),
      [this](Ctx, const protocol::Empty&) -> Result<protocol::ListUsersResponse> { return ListUsers(); });
}

Status UserHandlers::CreateUser(const protocol::UserRequest& req) {
  RDMQ_ASSIGN_OR_RETURN(metadata::UserInfo u, ToUser(req));
  RDMQ_RETURN_IF_ERROR(MetadataToWire(cluster_ ? cluster_->CreateUser(u) : meta_.CreateUser(u)));
  RDMQ_LOG(kInfo, "broker", "user created").kv("user", u.name);
  return Status::Ok();
}

Status UserHandlers::AlterUser(const protocol::UserRequest& req) {
  RDMQ_ASSIGN_OR_RETURN(metadata::UserInfo u, ToUser(req));
  RDMQ_RETURN_IF_ERROR(MetadataToWire(cluster_ ? cluster_->UpdateUser(u) : meta_.UpdateUser(u)));
  RDMQ_LOG(kInfo, "broker", "user credentials changed").kv("user", u.name);
  return Status::Ok();
}

Status UserHandlers::DeleteUser(const protocol::UserNameRequest& req) {
  RDMQ_RETURN_IF_ERROR(
      MetadataToWire(cluster_ ? cluster_->DeleteUser(req.name) : meta_.DeleteUser(req.name)));
  RDMQ_LOG(kInfo, "broker", "user deleted").kv("user", req.name);
  deleted_(req.name);
  return Status::Ok();
}

protocol::ListUsersResponse UserHandlers::ListUsers() const {
  protocol::ListUsersResponse r;
  for (const auto& u : meta_.ListUsers()) {
    protocol::UserListing l;
    l.name = u.name;
    for (const auto& [m, s] : u.scram) l.mechanisms.push_back(m);
    r.users.push_back(std::move(l));
  }
  return r;
}

}  // namespace rdmq::broker::internal
