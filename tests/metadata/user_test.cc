// SASL users in the metadata store: the validation rules, create/update/delete/list with their
// errors, the JSON forms (hex, put_user/delete_user records, the checkpoint's "users"), and
// durability through the log, a checkpoint, and a checkpoint written before users existed.
#include "rdmq/metadata/user.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "metadata/store_json.h"
#include "metadata/user_json.h"
#include "metadata/wal.h"
#include "rdmq/metadata/store.h"
#include "support/test_util.h"
#include "tests/metadata/open_store.h"

namespace rdmq::metadata {
namespace {

using test::Slurp;
using test::Spit;

// A secret of the right shape: every byte of the salt `fill`, the keys `fill + 1` and `fill + 2`
// (a NUL and bytes >= 0x80 among them when asked, to check that binary survives).
ScramSecret Secret(const std::string& mechanism, char fill, uint32_t iterations = 8192) {
  const size_t key = ScramKeySize(mechanism);
  return {std::string(16, fill), iterations, std::string(key, static_cast<char>(fill + 1)),
          std::string(key, static_cast<char>(fill + 2))};
}

UserInfo User(const std::string& name, char fill = 'a') {
  UserInfo u;
  u.name = name;
  u.scram[kScramSha256] = Secret(kScramSha256, fill);
  u.scram[kScramSha512] = Secret(kScramSha512, fill);
  return u;
}

TEST_CASE("user names: 1 to 128 of letters, digits and . _ @ -", "[user]") {
  CHECK_OK(ValidateUserName("alice"));
  CHECK_OK(ValidateUserName("svc.billing_2@example-corp"));
  CHECK_OK(ValidateUserName(std::string(128, 'x')));
  CHECK(ValidateUserName("").is(MetadataErrc::kBadUser));
  CHECK(ValidateUserName(std::string(129, 'x')).is(MetadataErrc::kBadUser));
  for (const char* bad : {"al ice", "alice,bob", "a=b", "ali/ce", "é"}) {
    const Status s = ValidateUserName(bad);
    INFO(bad);
    CHECK(s.is(MetadataErrc::kBadUser));
    CHECK(s.is(Errc::kInvalidArgument));
    CHECK(s.ToString().find("only letters, digits") != std::string::npos);
  }
}

TEST_CASE("a user's secrets: known mechanism, salt, iterations and key sizes are checked", "[user]") {
  CHECK(ScramKeySize(kScramSha256) == 32);
  CHECK(ScramKeySize(kScramSha512) == 64);
  CHECK(ScramKeySize("SCRAM-SHA-1") == 0);
  UserInfo u = User("alice");
  CHECK_OK(ValidateUser(u));
  const auto refused = [](const UserInfo& bad, const std::string& says) {
    const Status s = ValidateUser(bad);
    INFO(s.ToString());
    CHECK(s.is(MetadataErrc::kBadUser));
    CHECK(s.ToString().find(says) != std::string::npos);
  };
  SECTION("no secret") {
    u.scram.clear();
    refused(u, "at least one");
  }
  SECTION("one mechanism is enough") {
    u.scram.erase(kScramSha512);
    CHECK_OK(ValidateUser(u));
  }
  SECTION("unknown mechanism") {
    u.scram["PLAIN"] = Secret(kScramSha256, 'p');
    refused(u, "unknown mechanism 'PLAIN'");
  }
  SECTION("salt too short and too long") {
    u.scram[kScramSha256].salt = std::string(15, 's');
    refused(u, "salt has 15 bytes");
    u.scram[kScramSha256].salt = std::string(65, 's');
    refused(u, "salt has 65 bytes");
    u.scram[kScramSha256].salt = std::string(64, 's');
    CHECK_OK(ValidateUser(u));
  }
  SECTION("iterations out of range") {
    u.scram[kScramSha512].iterations = 4095;
    refused(u, "4095 iterations");
    u.scram[kScramSha512].iterations = 1'000'001;
    refused(u, "1000001 iterations");
    u.scram[kScramSha512].iterations = 4096;
    CHECK_OK(ValidateUser(u));
    u.scram[kScramSha512].iterations = 1'000'000;
    CHECK_OK(ValidateUser(u));
  }
  SECTION("keys of the other hash's size") {
    u.scram[kScramSha256].stored_key = std::string(64, 'k');
    refused(u, "must have 32 bytes");
    u = User("alice");
    u.scram[kScramSha512].server_key = std::string(32, 'k');
    refused(u, "must have 64 bytes");
  }
  SECTION("bad name") {
    u.name = "no spaces";
    refused(u, "user name");
  }
}

TEST_CASE("hex is lowercase, two digits a byte, and only that is read back", "[user]") {
  const std::string raw("\x00\x01\x7f\x80\xab\xff", 6);
  CHECK(HexEncode(raw) == "00017f80abff");
  auto back = HexDecode("00017f80abff");
  REQUIRE_OK(back);
  CHECK(*back == raw);
  CHECK(HexDecode("").value().empty());
  for (const char* bad : {"0", "ABCD", "0g", "00 1"}) {
    INFO(bad);
    CHECK(HexDecode(bad).status().is(MetadataErrc::kBadUser));
  }
}

TEST_CASE("users: create, get, list, update and delete, with their errors", "[user][store]") {
  test::TempDir dir;
  auto store = OpenStore(dir);
  CHECK(store->ListUsers().empty());
  CHECK_FALSE(store->GetUser("alice").has_value());

  REQUIRE_OK(store->CreateUser(User("bob")));
  REQUIRE_OK(store->CreateUser(User("alice")));
  const Status again = store->CreateUser(User("alice", 'z'));
  CHECK(again.is(MetadataErrc::kUserExists));
  CHECK(again.is(Errc::kAlreadyExists));
  CHECK(again.ToString().find("alice") != std::string::npos);
  CHECK(store->GetUser("alice") == User("alice"));  // the refused create changed nothing

  auto users = store->ListUsers();
  REQUIRE(users.size() == 2);
  CHECK(users[0].name == "alice");
  CHECK(users[1].name == "bob");

  // passwd: new secrets, and a mechanism may be dropped.
  UserInfo changed = User("alice", 'q');
  changed.scram.erase(kScramSha512);
  REQUIRE_OK(store->UpdateUser(changed));
  CHECK(store->GetUser("alice") == changed);
  const Status missing = store->UpdateUser(User("carol"));
  CHECK(missing.is(MetadataErrc::kNoSuchUser));
  CHECK(missing.is(Errc::kNotFound));
  CHECK_FALSE(store->GetUser("carol").has_value());

  // Invalid users are refused before anything is logged.
  const uint64_t seq = store->last_seq();
  UserInfo bad = User("dave");
  bad.scram[kScramSha256].salt = "short";
  CHECK(store->CreateUser(bad).is(MetadataErrc::kBadUser));
  bad = User("alice");
  bad.scram[kScramSha256].iterations = 1;
  CHECK(store->UpdateUser(bad).is(MetadataErrc::kBadUser));
  bad = User("alice");
  bad.scram["SCRAM-SHA-1"] = Secret(kScramSha256, 'x');
  CHECK(store->UpdateUser(bad).is(MetadataErrc::kBadUser));
  CHECK(store->CreateUser(User("bad name")).is(MetadataErrc::kBadUser));
  CHECK(store->DeleteUser("bad name").is(MetadataErrc::kBadUser));
  CHECK(store->last_seq() == seq);
  CHECK(store->GetUser("alice") == changed);

  REQUIRE_OK(store->DeleteUser("bob"));
  CHECK(store->DeleteUser("bob").is(MetadataErrc::kNoSuchUser));
  CHECK_FALSE(store->GetUser("bob").has_value());
  REQUIRE(store->ListUsers().size() == 1);
  // A deleted name can be used again.
  REQUIRE_OK(store->CreateUser(User("bob", 'b')));
  CHECK(store->GetUser("bob") == User("bob", 'b'));
}

TEST_CASE("users survive a restart from the log, and from a checkpoint", "[user][store]") {
  test::TempDir dir;
  UserInfo alice = User("alice");
  // Binary secrets: NUL and high bytes must come back exactly.
  alice.scram[kScramSha256].salt = std::string("\x00\xff\x80\x01salt-of-16-b", 16);
  const UserInfo carol = User("carol", 'c');
  {
    auto store = OpenStore(dir, /*checkpoint_every=*/1000);
    REQUIRE_OK(store->CreateTopic("orders", TopicConfig{}));
    REQUIRE_OK(store->CreateUser(User("alice", 'x')));
    REQUIRE_OK(store->CreateUser(User("bob")));
    REQUIRE_OK(store->CreateUser(carol));
    REQUIRE_OK(store->UpdateUser(alice));
    REQUIRE_OK(store->DeleteUser("bob"));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "metadata.json"));
  const auto expect = [&](const MetadataStore& store) {
    const auto users = store.ListUsers();
    REQUIRE(users.size() == 2);
    CHECK(users[0] == alice);
    CHECK(users[1] == carol);
    CHECK(store.ListTopics().size() == 1);
  };
  {
    auto store = OpenStore(dir, 1000);  // replayed from the log
    expect(*store);
    REQUIRE_OK(store->Checkpoint());
  }
  auto replay = wal::Replay((dir / "metadata.wal").string());
  REQUIRE_OK(replay);
  CHECK(replay->records.empty());
  const auto checkpoint = nlohmann::json::parse(Slurp(dir / "metadata.json"));
  CHECK(checkpoint["format"] == 1);
  REQUIRE(checkpoint["users"].size() == 2);
  CHECK(checkpoint["users"][0]["name"] == "alice");
  CHECK(checkpoint["users"][0]["scram"]["SCRAM-SHA-256"]["salt"] == "00ff800173616c742d6f662d31362d62");
  CHECK(checkpoint["users"][0]["scram"]["SCRAM-SHA-512"]["iterations"] == 8192);
  {
    auto store = OpenStore(dir, 1000);  // loaded from the checkpoint
    expect(*store);
    // And a later change goes to the log on top of the checkpoint.
    REQUIRE_OK(store->DeleteUser("carol"));
  }
  auto store = OpenStore(dir, 1000);
  REQUIRE(store->ListUsers().size() == 1);
  CHECK(store->ListUsers()[0] == alice);
}

TEST_CASE("a checkpoint written before users existed opens with no users", "[user][store]") {
  test::TempDir dir;
  {
    auto store = OpenStore(dir);
    REQUIRE_OK(store->CreateTopic("orders", TopicConfig{}));
    REQUIRE_OK(store->Checkpoint());
  }
  auto j = nlohmann::json::parse(Slurp(dir / "metadata.json"));
  REQUIRE(j.contains("users"));
  j.erase("users");
  Spit(dir / "metadata.json", j.dump(2) + "\n");
  {
    auto store = OpenStore(dir);
    CHECK(store->ListUsers().empty());
    CHECK(store->GetTopic("orders").ok());
    REQUIRE_OK(store->CreateUser(User("alice")));
  }
  auto store = OpenStore(dir);
  CHECK(store->GetUser("alice") == User("alice"));
}

TEST_CASE("a corrupt user in the checkpoint or the log is corruption that changes nothing", "[user][store]") {
  test::TempDir dir;
  {
    auto store = OpenStore(dir);
    REQUIRE_OK(store->CreateUser(User("alice")));
    REQUIRE_OK(store->Checkpoint());
  }
  const std::string good = Slurp(dir / "metadata.json");
  const auto refused = [&](MetadataErrc code, const std::string& says) {
    CheckRefusedToOpen(dir, code, says);
  };
  SECTION("checkpoint: users not an array") {
    auto j = nlohmann::json::parse(good);
    j["users"] = "alice";
    Spit(dir / "metadata.json", j.dump());
    refused(MetadataErrc::kCorruptCheckpoint, "users is not an array");
  }
  SECTION("checkpoint: a key of the wrong size") {
    auto j = nlohmann::json::parse(good);
    j["users"][0]["scram"]["SCRAM-SHA-256"]["stored_key"] = "abcd";
    const std::string bad = j.dump();
    Spit(dir / "metadata.json", bad);
    refused(MetadataErrc::kCorruptCheckpoint, "must have 32 bytes");
    CHECK(Slurp(dir / "metadata.json") == bad);
  }
  SECTION("checkpoint: uppercase hex") {
    auto j = nlohmann::json::parse(good);
    j["users"][0]["scram"]["SCRAM-SHA-256"]["salt"] = std::string(32, 'A');
    Spit(dir / "metadata.json", j.dump());
    refused(MetadataErrc::kCorruptCheckpoint, "not lowercase hex");
  }
  SECTION("checkpoint: the same user twice") {
    auto j = nlohmann::json::parse(good);
    j["users"].push_back(j["users"][0]);
    Spit(dir / "metadata.json", j.dump());
    refused(MetadataErrc::kCorruptCheckpoint, "'alice' twice");
  }
  SECTION("log: a put_user record with a bad secret") {
    auto j = nlohmann::json::parse(internal::EncodeMutation(internal::Mutation::PutUser(User("bob"))));
    j["user"]["scram"]["SCRAM-SHA-512"].erase("server_key");
    const std::string bad = wal::EncodeRecord(2, j.dump());
    Spit(dir / "metadata.wal", bad);
    refused(MetadataErrc::kCorruptLog, "needs salt, iterations, stored_key and server_key");
    CHECK(Slurp(dir / "metadata.wal") == bad);
  }
  SECTION("log: a delete_user record with a bad name") {
    Spit(dir / "metadata.wal", wal::EncodeRecord(2, R"({"op": "delete_user", "name": "a b"})"));
    refused(MetadataErrc::kCorruptLog, "delete_user");
  }
}

TEST_CASE("put_user and delete_user records are the documented JSON", "[user]") {
  const UserInfo u = User("alice");
  const std::string put = internal::EncodeMutation(internal::Mutation::PutUser(u));
  const auto j = nlohmann::json::parse(put);
  CHECK(j["op"] == "put_user");
  CHECK(j["user"]["name"] == "alice");
  const auto& s = j["user"]["scram"]["SCRAM-SHA-256"];
  const auto hex = [](const char* byte, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += byte;
    return out;
  };
  CHECK(s["salt"] == hex("61", 16));
  CHECK(s["iterations"] == 8192);
  CHECK(s["stored_key"] == hex("62", 32));
  CHECK(s["server_key"] == hex("63", 32));
  CHECK(j["user"]["scram"]["SCRAM-SHA-512"]["server_key"] == hex("63", 64));
  auto back = internal::DecodeMutation(put, "test", 1);
  REQUIRE_OK(back);
  CHECK(back->op == internal::Mutation::Op::kPutUser);
  CHECK(back->user == u);

  const std::string del = internal::EncodeMutation(internal::Mutation::DeleteUser("alice"));
  CHECK(nlohmann::json::parse(del) == nlohmann::json{{"op", "delete_user"}, {"name", "alice"}});
  auto d = internal::DecodeMutation(del, "test", 2);
  REQUIRE_OK(d);
  CHECK(d->op == internal::Mutation::Op::kDeleteUser);
  CHECK(d->name == "alice");
}

TEST_CASE("a user record for a cluster's znode: versioned JSON, checked when read", "[user]") {
  const UserInfo u = User("alice");
  auto back = DecodeUser(EncodeUser(u));
  REQUIRE_OK(back);
  CHECK(*back == u);
  CHECK(nlohmann::json::parse(EncodeUser(u))["version"] == 1);
  nlohmann::json j = nlohmann::json::parse(EncodeUser(u));
  j["version"] = 2;
  CHECK(DecodeUser(j.dump()).status().is(MetadataErrc::kBadUser));
  j.erase("version");
  CHECK(DecodeUser(j.dump()).status().is(MetadataErrc::kBadUser));
  CHECK(DecodeUser("[1]").status().is(MetadataErrc::kBadUser));
  CHECK(DecodeUser(R"({"version":1,"name":"bad name","scram":{}})").status().is(MetadataErrc::kBadUser));
}

}  // namespace
}  // namespace rdmq::metadata
