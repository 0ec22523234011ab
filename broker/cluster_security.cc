// ClusterMember's users and ACLs: kept in ZooKeeper, mirrored into the local metadata store.
#include <algorithm>

#include "cluster_member.h"
#include "rdmq/cluster/security_records.h"
#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

using coord::CoordErrc;
using metadata::MetadataErrc;

namespace {

// The user as the local store should hold it: created, or its secrets replaced.
Status PutLocal(metadata::MetadataStore& meta, const metadata::UserInfo& user) {
  Status s = meta.CreateUser(user);
  if (s.is(MetadataErrc::kUserExists)) s = meta.UpdateUser(user);
  return s;
}

}  // namespace

template <class F>
static Status WithSecurityStore(const ClusterMember& m, F&& f) {
  return m.WithZooKeeper([&](coord::ZkSession& zk, const std::string& root) {
    cluster::SecurityStore store(zk, root);
    return f(store);
  });
}

Status ClusterMember::CreateUser(const metadata::UserInfo& user) {
  RDMQ_RETURN_IF_ERROR(metadata::ValidateUser(user));
  MutexLock lock(security_mu_);
  Status s = WithSecurityStore(
      *this, [&](cluster::SecurityStore& z) { return z.CreateUser(user.name, metadata::EncodeUser(user)); });
  if (s.is(CoordErrc::kNodeExists))
    return Status(MetadataErrc::kUserExists, "user '" + user.name + "' exists");
  RDMQ_RETURN_IF_ERROR(s);
  return PutLocal(meta_, user);
}

Status ClusterMember::UpdateUser(const metadata::UserInfo& user) {
  RDMQ_RETURN_IF_ERROR(metadata::ValidateUser(user));
  MutexLock lock(security_mu_);
  Status s = WithSecurityStore(
      *this, [&](cluster::SecurityStore& z) { return z.SetUser(user.name, metadata::EncodeUser(user)); });
  if (s.is(CoordErrc::kNoNode)) return Status(MetadataErrc::kNoSuchUser, "no user '" + user.name + "'");
  RDMQ_RETURN_IF_ERROR(s);
  return PutLocal(meta_, user);
}

Status ClusterMember::DeleteUser(const std::string& name) {
  RDMQ_RETURN_IF_ERROR(metadata::ValidateUserName(name));
  MutexLock lock(security_mu_);
  Status s = WithSecurityStore(*this, [&](cluster::SecurityStore& z) { return z.DeleteUser(name); });
  if (s.is(CoordErrc::kNoNode)) return Status(MetadataErrc::kNoSuchUser, "no user '" + name + "'");
  RDMQ_RETURN_IF_ERROR(s);
  s = meta_.DeleteUser(name);
  return s.is(MetadataErrc::kNoSuchUser) ? Status::Ok() : s;
}

Result<uint32_t> ClusterMember::ChangeAcls(const std::vector<metadata::AclBinding>& bindings, bool add) {
  for (const auto& b : bindings) RDMQ_RETURN_IF_ERROR(metadata::ValidateAcl(b));
  MutexLock lock(security_mu_);
  uint32_t changed = 0;
  RDMQ_RETURN_IF_ERROR(WithSecurityStore(*this, [&](cluster::SecurityStore& z) {
    return z.EditAcls([&](const std::string& data) -> Result<std::string> {
      std::vector<metadata::AclBinding> acls;
      if (!data.empty()) {
        RDMQ_ASSIGN_OR_RETURN(acls, metadata::DecodeAcls(data));
      }
      changed = 0;
      for (const auto& b : bindings) {
        auto it = std::find(acls.begin(), acls.end(), b);
        if (add && it == acls.end()) {
          acls.push_back(b);
          ++changed;
        } else if (!add && it != acls.end()) {
          acls.erase(it);
          ++changed;
        }
      }
      return metadata::EncodeAcls(acls);
    });
  }));
  for (const auto& b : bindings) RDMQ_RETURN_IF_ERROR((add ? meta_.AddAcl(b) : meta_.RemoveAcl(b)).status());
  return changed;
}

void ClusterMember::OnSecurity(const cluster::SecurityRecords& records) {
  MutexLock lock(security_mu_);
  std::vector<std::string> deleted;
  std::map<std::string, metadata::UserInfo> wanted;
  for (const auto& [name, data] : records.users) {
    auto u = metadata::DecodeUser(data);
    if (!u.ok() || u->name != name) {
      RDMQ_LOG(kWarn, "broker", "a user in ZooKeeper rdmq cannot read is left out").kv("user", name);
      continue;
    }
    wanted.emplace(name, std::move(*u));
  }
  for (const metadata::UserInfo& have : meta_.ListUsers()) {
    if (wanted.count(have.name) != 0) continue;
    if (Status s = meta_.DeleteUser(have.name); s.ok()) {
      deleted.push_back(have.name);
    } else {
      RDMQ_LOG(kWarn, "broker", "mirroring a deleted user failed").kv("user", have.name).kv("error", s);
    }
  }
  for (const auto& [name, u] : wanted) {
    const auto have = meta_.GetUser(name);
    if (have && *have == u) continue;
    if (Status s = PutLocal(meta_, u); !s.ok())
      RDMQ_LOG(kWarn, "broker", "mirroring a user failed").kv("user", name).kv("error", s);
  }

  bool acls_changed = false;
  std::vector<metadata::AclBinding> acls;
  auto decoded = records.acls.empty() ? Result<std::vector<metadata::AclBinding>>(acls)
                                      : metadata::DecodeAcls(records.acls);
  if (!decoded.ok()) {
    RDMQ_LOG(kWarn, "broker", "the ACLs in ZooKeeper cannot be read; keeping this broker's")
        .kv("error", decoded.status());
  } else {
    for (const metadata::AclBinding& have : meta_.ListAcls()) {
      if (std::find(decoded->begin(), decoded->end(), have) != decoded->end()) continue;
      auto r = meta_.RemoveAcl(have);
      acls_changed = acls_changed || (r.ok() && *r);
    }
    for (const metadata::AclBinding& b : *decoded) {
      auto r = meta_.AddAcl(b);
      acls_changed = acls_changed || (r.ok() && *r);
    }
  }
  if (!deleted.empty() || acls_changed) {
    RDMQ_LOG(kInfo, "broker", "users and ACLs mirrored from the cluster")
        .kv("users_deleted", deleted.size())
        .kv("acls_changed", acls_changed);
  }
  if (security_listener_ && (!deleted.empty() || acls_changed)) security_listener_(deleted, acls_changed);
}

}  // namespace rdmq::broker::internal
