// Where `rdmq user` and `rdmq acl` keep users and ACLs: the broker, through AdminClient (the
// usual way), or, with --data-dir, the metadata store of a broker that is not running (the first
// user and the first ACLs of a broker that asks for logins and enforces ACLs, before that broker
// starts: docs/cli.md, "rdmq user", "rdmq acl").
//
// Threading: called once from main's thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "admin_common.h"
#include "rdmq/client/admin.h"

namespace rdmq::cli::admin {

class SecurityBackend {
 public:
  virtual ~SecurityBackend() = default;
  virtual Status Create(const client::UserCredentials& u) = 0;
  virtual Status Alter(const client::UserCredentials& u) = 0;
  virtual Status Delete(const std::string& name) = 0;
  virtual Result<std::vector<client::UserListing>> List() = 0;
  // ACLs: how many of `acls` were added / removed (each checked first: none changes on a bad one).
  virtual Result<uint32_t> AddAcls(const std::vector<client::AclBinding>& acls) = 0;
  virtual Result<uint32_t> RemoveAcls(const std::vector<client::AclBinding>& acls) = 0;
  virtual Result<std::vector<client::AclBinding>> ListAcls() = 0;
};

// The backend the command line asks for, or null after printing why not (`code`: the exit status).
// --data-dir refuses a directory that a running broker holds (its rdmq.lock).
std::unique_ptr<SecurityBackend> OpenSecurityBackend(const ParsedArgs& a, int* code);

// Whether `s` says the user exists / does not (from either backend).
bool IsUserExists(const Status& s);
bool IsNoSuchUser(const Status& s);

}  // namespace rdmq::cli::admin
