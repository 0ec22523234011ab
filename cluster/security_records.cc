#include "rdmq/cluster/security_records.h"

#include "layout.h"
#include "rdmq/cluster/model.h"

namespace rdmq::cluster {

using coord::CoordErrc;
using coord::CreateMode;

SecurityStore::SecurityStore(coord::ZkSession& zk, std::string root) : zk_(zk), root_(std::move(root)) {}

std::string SecurityStore::UserPath(const std::string& name) const {
  return internal::Layout{root_}.user(EscapeName(name));
}

Status SecurityStore::CreateUser(const std::string& name, const std::string& record) {
  RDMQ_RETURN_IF_ERROR(zk_.CreateParents(internal::Layout{root_}.users()));
  return zk_.Create(UserPath(name), record, CreateMode::kPersistent).status();
}

Status SecurityStore::SetUser(const std::string& name, const std::string& record) {
  return zk_.Set(UserPath(name), record, -1).status();
}

Status SecurityStore::DeleteUser(const std::string& name) { return zk_.Delete(UserPath(name), -1); }

Status SecurityStore::EditAcls(const std::function<Result<std::string>(const std::string&)>& edit) {
  const std::string path = internal::Layout{root_}.acls();
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto node = zk_.Get(path);
    if (!node.ok() && !node.status().is(CoordErrc::kNoNode)) return node.status();
    RDMQ_ASSIGN_OR_RETURN(std::string next, edit(node.ok() ? node->data : std::string()));
    Status written = node.ok() ? zk_.Set(path, next, node->stat.version).status()
                               : zk_.Create(path, next, CreateMode::kPersistent).status();
    if (written.ok()) return written;
    if (!written.is(CoordErrc::kBadVersion) && !written.is(CoordErrc::kNodeExists)) return written;
  }
  return Status(ClusterErrc::kStaleState, path + ": too many concurrent changes");
}

}  // namespace rdmq::cluster
