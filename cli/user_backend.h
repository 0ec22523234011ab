// Where `rdmq user` keeps users: the broker, through AdminClient (the usual way), or, with
// --data-dir, the metadata store of a broker that is not running (the first user of a broker
// whose control path asks for a login, before that broker starts: docs/cli.md, "rdmq user").
//
// Threading: called once from main's thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "admin_common.h"
#include "rdmq/client/admin.h"

namespace rdmq::cli::admin {

class UserBackend {
 public:
  virtual ~UserBackend() = default;
  virtual Status Create(const client::UserCredentials& u) = 0;
  virtual Status Alter(const client::UserCredentials& u) = 0;
  virtual Status Delete(const std::string& name) = 0;
  virtual Result<std::vector<client::UserListing>> List() = 0;
};

// The backend the command line asks for, or null after printing why not (`code`: the exit status).
// --data-dir refuses a directory that a running broker holds (its rdmq.lock).
std::unique_ptr<UserBackend> OpenUserBackend(const ParsedArgs& a, int* code);

// Whether `s` says the user exists / does not (from either backend).
bool IsUserExists(const Status& s);
bool IsNoSuchUser(const Status& s);

}  // namespace rdmq::cli::admin
