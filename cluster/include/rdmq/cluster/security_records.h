// A cluster's SASL users and ACLs in ZooKeeper (docs/replication.md, "ZooKeeper layout"):
// <root>/users/<escaped name>, one znode per user, and <root>/acls, one znode with every binding.
// Any broker a client asks writes them here; every broker's agent watches them and hands them to
// the broker (AgentListener::OnSecurity), which mirrors them into its local metadata store, where
// logins and the authorizer read them. The records are opaque JSON text here (the broker encodes
// and decodes them: metadata::EncodeUser, metadata::EncodeAcls).
//
// Threading: functions over the session given (ZkSession is thread-safe).
#pragma once

#include <functional>
#include <string>

#include "rdmq/common/status.h"
#include "rdmq/coord/zk.h"

namespace rdmq::cluster {

class SecurityStore {
 public:
  SecurityStore(coord::ZkSession& zk, std::string root);

  // CoordErrc::kNodeExists when the user exists.
  Status CreateUser(const std::string& name, const std::string& record);
  // CoordErrc::kNoNode when the user does not exist.
  Status SetUser(const std::string& name, const std::string& record);
  Status DeleteUser(const std::string& name);
  // Rewrites the ACL list: `edit` gets the znode's data ("" when there is none yet) and returns
  // the new data, or an error (then nothing is written). A change by another broker in between
  // makes it read and edit again.
  Status EditAcls(const std::function<Result<std::string>(const std::string&)>& edit);

 private:
  std::string UserPath(const std::string& name) const;

  coord::ZkSession& zk_;
  const std::string root_;
};

}  // namespace rdmq::cluster
