// The SASL user RPCs against a broker in this process, through the AdminClient: create, list,
// alter (passwd) and delete with the wire errors for each refusal, the secrets reaching the
// metadata store byte for byte, and users surviving a broker restart.
#include <catch2/catch.hpp>

#include "inproc_broker.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/messages.h"
#include "support/test_util.h"

namespace rdmq::broker::test {
namespace {

using client::UserCredentials;
using client::UserScramSecret;
using protocol::WireError;

// A secret of the mechanism's shape; `fill` varies the bytes (with a NUL and a high byte in the
// salt, so that binary is checked to travel intact).
UserScramSecret Secret(const std::string& mechanism, char fill, uint32_t iterations = 4096) {
  const size_t key = mechanism == "SCRAM-SHA-512" ? 64 : 32;
  std::string salt(16, fill);
  salt[0] = '\0';
  salt[1] = '\xff';
  return {mechanism, salt, iterations, std::string(key, static_cast<char>(fill + 1)),
          std::string(key, static_cast<char>(fill + 2))};
}

UserCredentials Both(const std::string& name, char fill = 'a') {
  return {name, {Secret("SCRAM-SHA-256", fill), Secret("SCRAM-SHA-512", fill)}};
}

void RequireError(const Status& s, WireError want, const std::string& says) {
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(s.is(want));
  CHECK(s.ToString().find(says) != std::string::npos);
}

TEST_CASE("user RPCs: create, list, alter, delete and their wire errors", "[broker][user]") {
  rdmq::test::TempDir dir;
  auto r = Start(TestConfig(dir));
  auto& admin = *r.admin;

  auto none = admin.ListUsers();
  REQUIRE_OK(none);
  CHECK(none->empty());

  REQUIRE_OK(admin.CreateUser(Both("bob")));
  REQUIRE_OK(admin.CreateUser({"alice", {Secret("SCRAM-SHA-512", 'x')}}));
  RequireError(admin.CreateUser(Both("alice")), WireError::kUserExists, "user 'alice' already exists");

  auto users = admin.ListUsers();
  REQUIRE_OK(users);
  REQUIRE(users->size() == 2);
  CHECK((*users)[0].name == "alice");
  CHECK((*users)[0].mechanisms == std::vector<std::string>{"SCRAM-SHA-512"});
  CHECK((*users)[1].name == "bob");
  CHECK((*users)[1].mechanisms == std::vector<std::string>{"SCRAM-SHA-256", "SCRAM-SHA-512"});

  SECTION("bad users are INVALID_USER and change nothing") {
    RequireError(admin.CreateUser(Both("no spaces")), WireError::kInvalidUser, "only letters, digits");
    RequireError(admin.CreateUser({"carol", {}}), WireError::kInvalidUser, "at least one");
    RequireError(admin.CreateUser({"carol", {Secret("SCRAM-SHA-1", 'c')}}), WireError::kInvalidUser,
                 "unknown mechanism 'SCRAM-SHA-1'");
    RequireError(admin.CreateUser({"carol", {Secret("SCRAM-SHA-256", 'c', 100)}}), WireError::kInvalidUser,
                 "100 iterations");
    UserCredentials short_salt = Both("carol");
    short_salt.secrets[0].salt = "salt";
    RequireError(admin.CreateUser(short_salt), WireError::kInvalidUser, "salt has 4 bytes");
    UserCredentials wrong_key = Both("carol");
    wrong_key.secrets[1].stored_key.resize(32);
    RequireError(admin.CreateUser(wrong_key), WireError::kInvalidUser, "must have 64 bytes");
    RequireError(admin.CreateUser({"carol", {Secret("SCRAM-SHA-256", 'c'), Secret("SCRAM-SHA-256", 'd')}}),
                 WireError::kInvalidUser, "mechanism SCRAM-SHA-256 twice");
    RequireError(admin.AlterUser({"bob", {Secret("SCRAM-SHA-256", 'c', 2'000'000)}}), WireError::kInvalidUser,
                 "2000000 iterations");
    RequireError(admin.DeleteUser("a/b"), WireError::kInvalidUser, "user name 'a/b'");
    auto after = admin.ListUsers();
    REQUIRE_OK(after);
    CHECK(after->size() == 2);
    CHECK((*after)[1].mechanisms.size() == 2);
  }
  SECTION("alter and delete of unknown users are UNKNOWN_USER") {
    RequireError(admin.AlterUser(Both("carol")), WireError::kUnknownUser, "no user 'carol'");
    RequireError(admin.DeleteUser("carol"), WireError::kUnknownUser, "no user 'carol'");
    CHECK(admin.DeleteUser("carol").is(Errc::kNotFound));
  }
  SECTION("alter replaces the secrets, delete forgets the user, and both last") {
    REQUIRE_OK(admin.AlterUser({"bob", {Secret("SCRAM-SHA-256", 'q', 8192)}}));
    REQUIRE_OK(admin.DeleteUser("alice"));
    RequireError(admin.DeleteUser("alice"), WireError::kUnknownUser, "alice");
    auto left = admin.ListUsers();
    REQUIRE_OK(left);
    REQUIRE(left->size() == 1);
    CHECK((*left)[0].name == "bob");
    CHECK((*left)[0].mechanisms == std::vector<std::string>{"SCRAM-SHA-256"});

    r.admin.reset();
    REQUIRE_OK(r.broker->Shutdown());
    r.broker.reset();
    {
      // The store holds exactly the bytes the client sent.
      auto meta = metadata::MetadataStore::Open({dir.str() + "/meta", 64, true});
      REQUIRE_OK(meta);
      const auto bob = (*meta)->GetUser("bob");
      REQUIRE(bob.has_value());
      REQUIRE(bob->scram.size() == 1);
      const auto& s = bob->scram.at("SCRAM-SHA-256");
      const UserScramSecret sent = Secret("SCRAM-SHA-256", 'q', 8192);
      CHECK(s.salt == sent.salt);
      CHECK(s.iterations == 8192);
      CHECK(s.stored_key == sent.stored_key);
      CHECK(s.server_key == sent.server_key);
      CHECK_FALSE((*meta)->GetUser("alice").has_value());
    }
    auto again = Start(TestConfig(dir));
    auto listed = again.admin->ListUsers();
    REQUIRE_OK(listed);
    REQUIRE(listed->size() == 1);
    CHECK((*listed)[0].name == "bob");
    RequireError(again.admin->CreateUser(Both("bob")), WireError::kUserExists, "bob");
  }
}

}  // namespace
}  // namespace rdmq::broker::test
