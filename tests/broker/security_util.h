// What the broker's security tests share: users and ACLs written to a broker's metadata store
// before it starts (as `rdmq user add --data-dir` and `rdmq acl add --data-dir` do), and client
// options that log in.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "rdmq/auth/scram.h"
#include "rdmq/client/options.h"
#include "rdmq/metadata/acl.h"
#include "rdmq/metadata/store.h"
#include "support/test_util.h"

namespace rdmq::broker::test {

inline metadata::ScramSecret SecretOf(auth::ScramHash h, const std::string& password) {
  auto c = auth::MakeScramCredential(h, password);
  REQUIRE_OK(c);
  return {c->salt, c->iterations, c->stored_key, c->server_key};
}

// Users (each with both SCRAM mechanisms and the password "<name>-secret") and ACL bindings,
// written to the metadata store of the broker that will run on `dir`.
inline void Provision(const rdmq::test::TempDir& dir, const std::vector<std::string>& users,
                      const std::vector<metadata::AclBinding>& acls = {}) {
  metadata::StoreOptions so;
  so.dir = dir.str() + "/meta";
  auto store = metadata::MetadataStore::Open(so);
  REQUIRE_OK(store);
  for (const auto& name : users) {
    metadata::UserInfo u{name,
                         {{"SCRAM-SHA-256", SecretOf(auth::ScramHash::kSha256, name + "-secret")},
                          {"SCRAM-SHA-512", SecretOf(auth::ScramHash::kSha512, name + "-secret")}}};
    REQUIRE_OK((*store)->CreateUser(u));
  }
  for (const auto& b : acls) REQUIRE_OK((*store)->AddAcl(b));
}

inline client::ClientOptions As(const std::string& bootstrap, const std::string& user,
                                const std::string& password, const std::string& mechanism = "SCRAM-SHA-256") {
  using namespace std::chrono_literals;
  client::ClientOptions o;
  o.bootstrap = bootstrap;
  o.sasl_username = user;
  o.sasl_password = password;
  o.sasl_mechanism = mechanism;
  o.request_timeout = 10s;
  return o;
}

}  // namespace rdmq::broker::test
