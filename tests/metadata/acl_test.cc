// ACL bindings: validation, names both ways, and the decision (literal, wildcard and prefixed
// resources, the any-user principal, implied Describe, deny over allow, no binding = refused);
// in the metadata store: add and remove, durability through the log and a checkpoint, corrupt
// entries refused.
#include "rdmq/metadata/acl.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <vector>

#include "metadata/store_json.h"
#include "metadata/wal.h"
#include "rdmq/metadata/store.h"
#include "support/test_util.h"
#include "tests/metadata/open_store.h"

namespace rdmq::metadata {
namespace {

AclBinding Allow(const std::string& user, AclOperation op, AclResourceType type, const std::string& name,
                 AclPatternType pattern = AclPatternType::kLiteral) {
  return {"User:" + user, AclPermission::kAllow, op, type, pattern, name};
}

AclBinding Deny(const std::string& user, AclOperation op, AclResourceType type, const std::string& name) {
  return {"User:" + user, AclPermission::kDeny, op, type, AclPatternType::kLiteral, name};
}

constexpr auto kTopic = AclResourceType::kTopic;
constexpr auto kGroup = AclResourceType::kGroup;
constexpr auto kCluster = AclResourceType::kCluster;

TEST_CASE("acl: nothing is allowed without a binding that allows it", "[metadata][acl]") {
  const std::vector<AclBinding> none;
  CHECK_FALSE(Authorize(none, "alice", kTopic, "orders", AclOperation::kRead));
  const std::vector<AclBinding> acls = {Allow("alice", AclOperation::kRead, kTopic, "orders")};
  CHECK(Authorize(acls, "alice", kTopic, "orders", AclOperation::kRead));
  CHECK_FALSE(Authorize(acls, "alice", kTopic, "orders", AclOperation::kWrite));  // another operation
  CHECK_FALSE(Authorize(acls, "alice", kTopic, "orders2", AclOperation::kRead));  // another name
  CHECK_FALSE(Authorize(acls, "alice", kGroup, "orders", AclOperation::kRead));   // another type
  CHECK_FALSE(Authorize(acls, "bob", kTopic, "orders", AclOperation::kRead));     // another user
  CHECK_FALSE(Authorize(acls, "alice2", kTopic, "orders", AclOperation::kRead));  // not a prefix match
}

TEST_CASE("acl: wildcards, prefixes, All and the Describe that reading implies", "[metadata][acl]") {
  const std::vector<AclBinding> acls = {
      Allow("*", AclOperation::kDescribe, kTopic, "*"),
      Allow("alice", AclOperation::kWrite, kTopic, "billing-", AclPatternType::kPrefixed),
      Allow("bob", AclOperation::kAll, kGroup, "etl"),
      Allow("carol", AclOperation::kRead, kTopic, "audit"),
      Allow("admin", AclOperation::kAlter, kCluster, "cluster"),
  };
  CHECK(Authorize(acls, "anyone", kTopic, "whatever", AclOperation::kDescribe));
  CHECK_FALSE(Authorize(acls, "anyone", kTopic, "whatever", AclOperation::kRead));
  CHECK(Authorize(acls, "alice", kTopic, "billing-eu", AclOperation::kWrite));
  CHECK(Authorize(acls, "alice", kTopic, "billing-", AclOperation::kWrite));
  CHECK_FALSE(Authorize(acls, "alice", kTopic, "billing", AclOperation::kWrite));
  CHECK_FALSE(Authorize(acls, "alice", kTopic, "xbilling-eu", AclOperation::kWrite));
  for (const auto op : {AclOperation::kRead, AclOperation::kWrite, AclOperation::kCreate,
                        AclOperation::kDelete, AclOperation::kAlter, AclOperation::kDescribe}) {
    CHECK(Authorize(acls, "bob", kGroup, "etl", op));
  }
  CHECK(Authorize(acls, "carol", kGroup, "x", AclOperation::kDescribe) == false);
  // An allow of Read implies Describe on the same resource, and nothing else.
  const std::vector<AclBinding> reader = {Allow("carol", AclOperation::kRead, kTopic, "audit")};
  CHECK(Authorize(reader, "carol", kTopic, "audit", AclOperation::kDescribe));
  CHECK_FALSE(Authorize(reader, "carol", kTopic, "audit", AclOperation::kAlter));
  CHECK(Authorize(acls, "admin", kCluster, "cluster", AclOperation::kDescribe));
  CHECK_FALSE(Authorize(acls, "admin", kCluster, "cluster", AclOperation::kCreate));
}

TEST_CASE("acl: a matching deny wins over any allow, and denies only what it names", "[metadata][acl]") {
  const std::vector<AclBinding> acls = {
      Allow("*", AclOperation::kAll, kTopic, "*"),
      Deny("mallory", AclOperation::kWrite, kTopic, "orders"),
      Deny("*", AclOperation::kDelete, kTopic, "audit"),
  };
  CHECK(Authorize(acls, "alice", kTopic, "orders", AclOperation::kWrite));
  CHECK_FALSE(Authorize(acls, "mallory", kTopic, "orders", AclOperation::kWrite));
  CHECK(Authorize(acls, "mallory", kTopic, "orders", AclOperation::kRead));
  CHECK(Authorize(acls, "mallory", kTopic, "orders", AclOperation::kDescribe));
  CHECK(Authorize(acls, "mallory", kTopic, "other", AclOperation::kWrite));
  CHECK_FALSE(Authorize(acls, "alice", kTopic, "audit", AclOperation::kDelete));
  CHECK(Authorize(acls, "alice", kTopic, "audit", AclOperation::kRead));
  const std::vector<AclBinding> deny_all = {Allow("eve", AclOperation::kRead, kTopic, "t"),
                                            Deny("eve", AclOperation::kAll, kTopic, "t")};
  CHECK_FALSE(Authorize(deny_all, "eve", kTopic, "t", AclOperation::kRead));
  CHECK_FALSE(Authorize(deny_all, "eve", kTopic, "t", AclOperation::kDescribe));
}

TEST_CASE("acl: names parse in any case, unknown ones are refused naming the choices", "[metadata][acl]") {
  for (const auto op :
       {AclOperation::kRead, AclOperation::kWrite, AclOperation::kCreate, AclOperation::kDelete,
        AclOperation::kAlter, AclOperation::kDescribe, AclOperation::kAll}) {
    auto back = ParseAclOperation(Name(op));
    REQUIRE_OK(back);
    CHECK(*back == op);
  }
  CHECK(*ParseAclOperation("WRITE") == AclOperation::kWrite);
  CHECK(*ParseAclResourceType("Topic") == kTopic);
  CHECK(*ParseAclPatternType("PREFIXED") == AclPatternType::kPrefixed);
  CHECK(*ParseAclPermission("Deny") == AclPermission::kDeny);
  const auto bad = ParseAclOperation("publish");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().is(MetadataErrc::kBadAcl));
  CHECK(bad.status().ToString().find("operation 'publish': one of read, write, create, delete, alter, "
                                     "describe, all") != std::string::npos);
  CHECK_FALSE(ParseAclResourceType("queue").ok());
  CHECK_FALSE(ParseAclPatternType("regex").ok());
  CHECK_FALSE(ParseAclPermission("maybe").ok());
  CHECK(Describe(Allow("alice", AclOperation::kWrite, kTopic, "billing-", AclPatternType::kPrefixed)) ==
        "allow User:alice write topic:billing-*");
}

TEST_CASE("acl: bindings that cannot be stored are refused, naming why", "[metadata][acl]") {
  CHECK_OK(ValidateAcl(Allow("alice", AclOperation::kRead, kTopic, "orders")));
  CHECK_OK(ValidateAcl(Allow("*", AclOperation::kRead, kTopic, "*")));
  CHECK_OK(ValidateAcl(Allow("admin", AclOperation::kAlter, kCluster, "cluster")));
  struct Case {
    AclBinding b;
    std::string says;
  };
  AclBinding no_user = Allow("x", AclOperation::kRead, kTopic, "t");
  no_user.principal = "Group:ops";
  const std::vector<Case> cases = {
      {no_user, "the principal must be User:NAME or User:*"},
      {Allow("al ice", AclOperation::kRead, kTopic, "t"), "only letters, digits"},
      {Allow("alice", AclOperation::kRead, kTopic, ""), "the resource name is empty"},
      {Allow("alice", AclOperation::kRead, kTopic, std::string(250, 't')), "longer than 249"},
      {Allow("alice", AclOperation::kRead, kTopic, "*", AclPatternType::kPrefixed), "not a prefix"},
      {Allow("alice", AclOperation::kAlter, kCluster, "prod"), "the literal name 'cluster'"},
      {Allow("alice", AclOperation::kAlter, kCluster, "cluster", AclPatternType::kPrefixed), "literal name"},
  };
  for (const auto& k : cases) {
    const Status s = ValidateAcl(k.b);
    INFO(Describe(k.b) << " -> " << s.ToString());
    CHECK(s.is(MetadataErrc::kBadAcl));
    CHECK(s.ToString().find(k.says) != std::string::npos);
  }
}

}  // namespace
}  // namespace rdmq::metadata

// ---- In the metadata store --------------------------------------------------------------------

namespace rdmq::metadata {
namespace {

using test::Slurp;
using test::Spit;

AclBinding Writer(const std::string& user, const std::string& prefix) {
  return {"User:" + user,          AclPermission::kAllow,     AclOperation::kWrite,
          AclResourceType::kTopic, AclPatternType::kPrefixed, prefix};
}

TEST_CASE("acls in the store: add, remove, list, a repeat changes nothing, bad ones refused",
          "[metadata][acl][store]") {
  test::TempDir dir;
  auto store = OpenStore(dir);
  CHECK(store->ListAcls().empty());
  auto added = store->AddAcl(Writer("alice", "billing-"));
  REQUIRE_OK(added);
  CHECK(*added);
  const uint64_t seq = store->last_seq();
  added = store->AddAcl(Writer("alice", "billing-"));
  REQUIRE_OK(added);
  CHECK_FALSE(*added);
  CHECK(store->last_seq() == seq);  // nothing logged
  REQUIRE_OK(store->AddAcl(Writer("bob", "audit")));
  CHECK(store->ListAcls() == std::vector<AclBinding>{Writer("alice", "billing-"), Writer("bob", "audit")});
  auto removed = store->RemoveAcl(Writer("bob", "audit"));
  REQUIRE_OK(removed);
  CHECK(*removed);
  removed = store->RemoveAcl(Writer("bob", "audit"));
  REQUIRE_OK(removed);
  CHECK_FALSE(*removed);
  AclBinding bad = Writer("alice", "x");
  bad.principal = "alice";
  CHECK(store->AddAcl(bad).status().is(MetadataErrc::kBadAcl));
  CHECK(store->ListAcls() == std::vector<AclBinding>{Writer("alice", "billing-")});
}

TEST_CASE("acls survive a restart from the log and from a checkpoint, old checkpoints have none",
          "[metadata][acl][store]") {
  test::TempDir dir;
  {
    auto store = OpenStore(dir);
    REQUIRE_OK(store->AddAcl(Writer("alice", "billing-")));
    REQUIRE_OK(store->AddAcl(Writer("bob", "audit")));
    REQUIRE_OK(store->RemoveAcl(Writer("bob", "audit")));
  }
  {
    auto store = OpenStore(dir);  // replayed from the log
    CHECK(store->ListAcls() == std::vector<AclBinding>{Writer("alice", "billing-")});
    REQUIRE_OK(store->Checkpoint());
  }
  auto j = nlohmann::json::parse(Slurp(dir / "metadata.json"));
  REQUIRE(j["acls"].size() == 1);
  CHECK(j["acls"][0] == nlohmann::json{{"principal", "User:alice"},
                                       {"permission", "allow"},
                                       {"operation", "write"},
                                       {"resource_type", "topic"},
                                       {"pattern_type", "prefixed"},
                                       {"resource_name", "billing-"}});
  {
    auto store = OpenStore(dir);  // from the checkpoint
    CHECK(store->ListAcls() == std::vector<AclBinding>{Writer("alice", "billing-")});
  }
  j.erase("acls");
  Spit(dir / "metadata.json", j.dump(2) + "\n");
  auto store = OpenStore(dir);
  CHECK(store->ListAcls().empty());
}

TEST_CASE("a corrupt ACL in the checkpoint or the log is corruption that changes nothing",
          "[metadata][acl][store]") {
  test::TempDir dir;
  {
    auto store = OpenStore(dir);
    REQUIRE_OK(store->AddAcl(Writer("alice", "billing-")));
    REQUIRE_OK(store->Checkpoint());
  }
  const std::string good = Slurp(dir / "metadata.json");
  const auto refused = [&](MetadataErrc code, const std::string& says) {
    CheckRefusedToOpen(dir, code, says);
  };
  SECTION("checkpoint: an unknown operation") {
    auto j = nlohmann::json::parse(good);
    j["acls"][0]["operation"] = "publish";
    const std::string bad = j.dump();
    Spit(dir / "metadata.json", bad);
    refused(MetadataErrc::kCorruptCheckpoint, "operation 'publish'");
    CHECK(Slurp(dir / "metadata.json") == bad);
  }
  SECTION("checkpoint: the same ACL twice") {
    auto j = nlohmann::json::parse(good);
    j["acls"].push_back(j["acls"][0]);
    Spit(dir / "metadata.json", j.dump());
    refused(MetadataErrc::kCorruptCheckpoint, "twice");
  }
  SECTION("log: a put_acl record without a principal") {
    auto j = nlohmann::json::parse(internal::EncodeMutation(internal::Mutation::PutAcl(Writer("bob", "b"))));
    j["acl"].erase("principal");
    const std::string bad = wal::EncodeRecord(2, j.dump());
    Spit(dir / "metadata.wal", bad);
    refused(MetadataErrc::kCorruptLog, "without a string principal");
    CHECK(Slurp(dir / "metadata.wal") == bad);
  }
}

TEST_CASE("acl: a cluster's ACL list znode is versioned JSON, checked when read", "[metadata][acl]") {
  const std::vector<AclBinding> acls{Allow("alice", AclOperation::kWrite, kTopic, "orders"),
                                     Deny("bob", AclOperation::kRead, kGroup, "billing")};
  auto back = DecodeAcls(EncodeAcls(acls));
  REQUIRE_OK(back);
  CHECK(*back == acls);
  auto none = DecodeAcls(EncodeAcls({}));
  REQUIRE_OK(none);
  CHECK(none->empty());
  CHECK(DecodeAcls(R"({"version":2,"acls":[]})").status().is(MetadataErrc::kBadAcl));
  CHECK(DecodeAcls(R"({"version":1})").status().is(MetadataErrc::kBadAcl));
  CHECK(DecodeAcls(R"({"version":1,"acls":[{"principal":"User:a"}]})").status().is(MetadataErrc::kBadAcl));
  CHECK(DecodeAcls("not json").status().is(MetadataErrc::kBadAcl));
}

}  // namespace
}  // namespace rdmq::metadata
