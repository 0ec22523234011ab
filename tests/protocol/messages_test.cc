#include "rdmq/protocol/messages.h"

#include <catch2/catch.hpp>
#include <random>

#include "rdmq/protocol/acl_messages.h"
#include "rdmq/protocol/replica_messages.h"
#include "rdmq/protocol/user_messages.h"
#include "support/test_util.h"
#include "tests/protocol/all_messages.h"

namespace rdmq::protocol {
namespace {

// Fills every field of a message with random values (visitor over the same field list).
class RandomFill {
 public:
  explicit RandomFill(std::mt19937_64* rng) : rng_(rng) {}
  template <class T>
  void operator()(T& v) {
    if constexpr (std::is_enum_v<T>) {
      v = static_cast<T>((*rng_)() % 3);
    } else if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>((*rng_)());
    } else if constexpr (internal::IsStrongInt<T>::value) {
      v = T(static_cast<typename T::rep>((*rng_)()));
    } else if constexpr (std::is_same_v<T, std::string>) {
      v.assign((*rng_)() % 40, static_cast<char>('a' + (*rng_)() % 26));
    } else if constexpr (std::is_same_v<T, Blob>) {
      v.bytes.resize((*rng_)() % 100);
      for (auto& c : v.bytes) c = static_cast<char>((*rng_)());
    } else {
      v.Visit(*this);
    }
  }
  template <class T>
  void operator()(std::vector<T>& v) {
    v.resize((*rng_)() % 4);
    for (auto& e : v) (*this)(e);
  }

 private:
  std::mt19937_64* rng_;
};

struct RoundTrip {
  std::mt19937_64* rng;
  template <class M>
  void operator()() {
    for (int i = 0; i < 50; ++i) {
      M m{};
      RandomFill fill(rng);
      fill(m);
      const std::string bytes = Encode(m);
      auto back = Decode<M>(coding::AsBytes(bytes));
      REQUIRE_OK(back);
      CHECK(Encode(*back) == bytes);
      // Every strict prefix is malformed, never a crash or a partial success.
      for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 16) {
        CHECK(Decode<M>(coding::AsBytes(bytes).first(cut)).status().is(CodecErrc::kMalformed));
      }
      // Trailing garbage is rejected.
      CHECK(Decode<M>(coding::AsBytes(bytes + "x")).status().is(CodecErrc::kMalformed));
    }
  }
};

TEST_CASE("every message round-trips and rejects truncation and trailing bytes", "[protocol]") {
  std::mt19937_64 rng(test::TestSeed());
  testing::ForEachMessageType(RoundTrip{&rng});
}

TEST_CASE("the encoding is the documented one", "[protocol]") {
  GetSegmentRequest r{"ab", PartitionId(7), Offset(-2)};
  const std::string b = Encode(r);
  // u32 len "ab" | i32 7 | i64 -2
  REQUIRE(b.size() == 4 + 2 + 4 + 8);
  CHECK(b.substr(0, 6) == std::string("\x02\x00\x00\x00"
                                      "ab",
                                      6));
  CHECK(b.substr(6, 4) == std::string("\x07\x00\x00\x00", 4));
  CHECK(b.substr(10) == std::string(8, '\xfe').replace(1, 7, std::string(7, '\xff')));
}

// A message with strong-typed fields: they travel as the integers they hold.
struct StrongFields {
  Offset offset;
  PartitionId partition;
  LeaseId lease;
  int32_t plain = 0;
  template <class V>
  void Visit(V& v) {
    v(offset);
    v(partition);
    v(lease);
    v(plain);
  }
};

TEST_CASE("strong-typed fields are encoded as their integers", "[protocol]") {
  const StrongFields s{Offset{-2}, PartitionId{7}, LeaseId{0x0102030405060708ull}, 9};
  const std::string b = Encode(s);
  std::string want;
  coding::Writer w(&want);
  w.LE<int64_t>(-2);
  w.LE<int32_t>(7);
  w.LE<uint64_t>(0x0102030405060708ull);
  w.LE<int32_t>(9);
  CHECK(b == want);
  auto back = Decode<StrongFields>(coding::AsBytes(b));
  REQUIRE_OK(back);
  CHECK(back->offset == Offset{-2});
  CHECK(back->partition == PartitionId{7});
  CHECK(back->lease == LeaseId{0x0102030405060708ull});
  CHECK(back->plain == 9);
  CHECK(Decode<StrongFields>(coding::AsBytes(b).first(b.size() - 1)).status().is(CodecErrc::kMalformed));
}

TEST_CASE("lying lengths and counts are rejected without large allocations", "[protocol]") {
  std::string b;
  coding::Writer w(&b);
  w.LE<uint32_t>(0xffffffffu);  // string length
  CHECK(Decode<TopicNameRequest>(coding::AsBytes(b)).status().is(CodecErrc::kMalformed));
  std::string c;
  coding::Writer wc(&c);
  wc.LE<uint32_t>(900000);  // array count with nothing behind it
  CHECK(Decode<ListTopicsResponse>(coding::AsBytes(c)).status().is(CodecErrc::kMalformed));
}

TEST_CASE("error responses carry the wire code and the broker's message", "[protocol]") {
  const std::string e = EncodeError(WireError::kUnknownTopic, "no topic 'orders'");
  auto r = DecodeResponse<TopicResponse>(coding::AsBytes(e));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().is(WireError::kUnknownTopic));
  CHECK(r.status().is(Errc::kNotFound));
  CHECK(r.status().ToString() == "no topic 'orders': UNKNOWN_TOPIC [rdmq:2]");

  WatchResponse w{42};
  auto ok = DecodeResponse<WatchResponse>(coding::AsBytes(EncodeOk(w)));
  REQUIRE_OK(ok);
  CHECK(ok->generation == 42);
}

TEST_CASE("statuses from other modules map onto wire errors", "[protocol]") {
  CHECK(ToWireError(Status(WireError::kPartitionBusy)) == WireError::kPartitionBusy);
  CHECK(ToWireError(Status(Errc::kOutOfRange, "offset 3")) == WireError::kOffsetOutOfRange);
  CHECK(ToWireError(Status::FromErrno(ENOSPC, "append")) == WireError::kStorageError);
  CHECK(ToWireError(Status(Errc::kCorruption)) == WireError::kCorruptMessage);
  auto r = DecodeResponse<Empty>(coding::AsBytes(EncodeError(Status(Errc::kOutOfRange, "offset 3 < 10"))));
  CHECK(r.status().is(WireError::kOffsetOutOfRange));
  CHECK(r.status().context() == "offset 3 < 10");
}

TEST_CASE("the user RPCs: ids, names, wire errors and the documented encoding", "[protocol]") {
  CHECK(static_cast<uint16_t>(Api::kCreateUser) == 50);
  CHECK(static_cast<uint16_t>(Api::kAlterUser) == 51);
  CHECK(static_cast<uint16_t>(Api::kDeleteUser) == 52);
  CHECK(static_cast<uint16_t>(Api::kListUsers) == 53);
  CHECK(ApiName(Api::kCreateUser) == "CreateUser");
  CHECK(ApiName(Api::kAlterUser) == "AlterUser");
  CHECK(ApiName(Api::kDeleteUser) == "DeleteUser");
  CHECK(ApiName(Api::kListUsers) == "ListUsers");
  // The codes are on the wire: appended after INCONSISTENT_GROUP_PROTOCOL (29), never renumbered.
  CHECK(static_cast<int>(WireError::kInconsistentGroupProtocol) == 29);
  CHECK(static_cast<int>(WireError::kInvalidUser) == 30);
  CHECK(static_cast<int>(WireError::kUserExists) == 31);
  CHECK(static_cast<int>(WireError::kUnknownUser) == 32);
  CHECK(Status(WireError::kInvalidUser).is(Errc::kInvalidArgument));
  CHECK(Status(WireError::kUserExists).is(Errc::kAlreadyExists));
  CHECK(Status(WireError::kUnknownUser).is(Errc::kNotFound));
  CHECK(Status(WireError::kUnknownUser, "no user 'bob'").ToString() ==
        "no user 'bob': UNKNOWN_USER [rdmq:32]");

  // u32 len "al" | u32 count 1 | {u32 len mechanism | u32 len salt | u32 iterations | u32 len key | ...}
  UserRequest r{"al", {{"SCRAM-SHA-256", Blob{std::string("\x00\xff", 2)}, 4096, Blob{"k"}, Blob{"sk"}}}};
  std::string want;
  coding::Writer w(&want);
  w.LE<uint32_t>(2);
  w.Bytes("al");
  w.LE<uint32_t>(1);
  w.LE<uint32_t>(13);
  w.Bytes("SCRAM-SHA-256");
  w.LE<uint32_t>(2);
  w.Bytes(std::string("\x00\xff", 2));
  w.LE<uint32_t>(4096);
  w.LE<uint32_t>(1);
  w.Bytes("k");
  w.LE<uint32_t>(2);
  w.Bytes("sk");
  CHECK(Encode(r) == want);
  auto back = Decode<UserRequest>(coding::AsBytes(want));
  REQUIRE_OK(back);
  CHECK(back->name == "al");
  REQUIRE(back->secrets.size() == 1);
  CHECK(back->secrets[0] == r.secrets[0]);

  // A listing carries names and mechanisms: nothing else travels back.
  ListUsersResponse l{{{"al", {"SCRAM-SHA-256", "SCRAM-SHA-512"}}}};
  std::string lwant;
  coding::Writer lw(&lwant);
  lw.LE<uint32_t>(1);
  lw.LE<uint32_t>(2);
  lw.Bytes("al");
  lw.LE<uint32_t>(2);
  lw.LE<uint32_t>(13);
  lw.Bytes("SCRAM-SHA-256");
  lw.LE<uint32_t>(13);
  lw.Bytes("SCRAM-SHA-512");
  CHECK(Encode(l) == lwant);
}

TEST_CASE("the ACL RPCs: ids, names, wire errors and the documented encoding", "[protocol]") {
  CHECK(static_cast<uint16_t>(Api::kCreateAcls) == 60);
  CHECK(static_cast<uint16_t>(Api::kDeleteAcls) == 61);
  CHECK(static_cast<uint16_t>(Api::kListAcls) == 62);
  CHECK(ApiName(Api::kCreateAcls) == "CreateAcls");
  CHECK(ApiName(Api::kDeleteAcls) == "DeleteAcls");
  CHECK(ApiName(Api::kListAcls) == "ListAcls");
  // Appended after AUTHENTICATION_REQUIRED (34), never renumbered.
  CHECK(static_cast<int>(WireError::kAuthenticationRequired) == 34);
  CHECK(static_cast<int>(WireError::kTopicAuthorizationFailed) == 35);
  CHECK(static_cast<int>(WireError::kGroupAuthorizationFailed) == 36);
  CHECK(static_cast<int>(WireError::kClusterAuthorizationFailed) == 37);
  CHECK(static_cast<int>(WireError::kInvalidAcl) == 38);
  CHECK(Status(WireError::kTopicAuthorizationFailed).is(Errc::kPermissionDenied));
  CHECK(Status(WireError::kGroupAuthorizationFailed).is(Errc::kPermissionDenied));
  CHECK(Status(WireError::kClusterAuthorizationFailed).is(Errc::kPermissionDenied));
  CHECK(Status(WireError::kInvalidAcl).is(Errc::kInvalidArgument));

  // u32 count 1 | then six strings (u32 length + bytes): principal, permission, operation,
  // resource type, pattern type, resource name
  AclsRequest r{{{"User:al", "allow", "write", "topic", "prefixed", "or"}}};
  std::string want;
  coding::Writer w(&want);
  w.LE<uint32_t>(1);
  for (const char* f : {"User:al", "allow", "write", "topic", "prefixed", "or"}) {
    w.LE<uint32_t>(static_cast<uint32_t>(std::string_view(f).size()));
    w.Bytes(f);
  }
  CHECK(Encode(r) == want);
  auto back = Decode<AclsRequest>(coding::AsBytes(want));
  REQUIRE_OK(back);
  REQUIRE(back->acls.size() == 1);
  CHECK(back->acls[0] == r.acls[0]);
  CHECK(Encode(AclsResponse{3}) == std::string("\x03\x00\x00\x00", 4));
}

TEST_CASE("the cluster's additions: DescribeCluster, NOT_LEADER, NOT_ENOUGH_REPLICAS, partition leadership",
          "[protocol]") {
  CHECK(static_cast<uint16_t>(Api::kDescribeCluster) == 15);
  CHECK(ApiName(Api::kDescribeCluster) == "DescribeCluster");
  CHECK(static_cast<int>(WireError::kInvalidAcl) == 38);
  CHECK(static_cast<int>(WireError::kNotLeader) == 39);
  CHECK(static_cast<int>(WireError::kNotEnoughReplicas) == 40);
  CHECK(static_cast<int>(WireError::kNotCoordinator) == 41);
  CHECK(Status(WireError::kNotLeader).is(Errc::kFailedPrecondition));
  // A partition's leadership follows its log's numbers.
  PartitionInfo p;
  p.partition = PartitionId(2);
  p.leader = 3;
  p.leader_epoch = 4;
  p.replicas = {3, 1};
  p.isr = {3};
  p.local = 1;
  const std::string bytes = Encode(p);
  CHECK(bytes.size() == 4 + 8 + 8 + 4 + 8 + 8 + 1 + 4 + 4 + (4 + 8) + (4 + 4) + 1);
  auto back = Decode<PartitionInfo>(coding::AsBytes(bytes));
  REQUIRE_OK(back);
  CHECK(back->replicas == std::vector<int32_t>{3, 1});
  CHECK(back->isr == std::vector<int32_t>{3});
  CHECK(back->leader == 3);
  CHECK(back->local == 1);
}

TEST_CASE("the replication RPCs: ids, names and the documented encoding", "[protocol]") {
  CHECK(static_cast<uint16_t>(Api::kOpenReplica) == 47);
  CHECK(static_cast<uint16_t>(Api::kReplicaCommit) == 48);
  CHECK(static_cast<uint16_t>(Api::kReplicaTruncate) == 49);
  CHECK(ApiName(Api::kOpenReplica) == "OpenReplica");
  CHECK(ApiName(Api::kReplicaCommit) == "ReplicaCommit");
  CHECK(ApiName(Api::kReplicaTruncate) == "ReplicaTruncate");
  CHECK(static_cast<int>(WireError::kFencedLeaderEpoch) == 42);
  CHECK(static_cast<int>(WireError::kUnknownLeaderEpoch) == 43);

  // ReplicaCommit: lease u64, epoch i32, segment i64, position u64, length u32, next i64, hw i64.
  ReplicaCommitRequest c{LeaseId{7}, 3, Offset{100}, Position{4096}, 512, Offset{140}, Offset{120}};
  std::string want;
  coding::Writer w(&want);
  w.LE<uint64_t>(7);
  w.LE<int32_t>(3);
  w.LE<int64_t>(100);
  w.LE<uint64_t>(4096);
  w.LE<uint32_t>(512);
  w.LE<int64_t>(140);
  w.LE<int64_t>(120);
  CHECK(Encode(c) == want);

  // The epoch cache travels as a counted array of (epoch i32, start i64), oldest first.
  OpenReplicaResponse r;
  r.log_start = Offset{5};
  r.high_watermark = Offset{9};
  r.epochs = {{1, Offset{5}}, {4, Offset{8}}};
  auto bytes = Encode(r);
  auto back = Decode<OpenReplicaResponse>(coding::AsBytes(bytes));
  REQUIRE_OK(back);
  CHECK(back->epochs == r.epochs);
  CHECK(back->log_start == Offset{5});
  CHECK(back->high_watermark == Offset{9});
  std::string tail;
  coding::Writer t(&tail);
  t.LE<int64_t>(5);
  t.LE<int64_t>(9);
  t.LE<uint32_t>(2);
  t.LE<int32_t>(1);
  t.LE<int64_t>(5);
  t.LE<int32_t>(4);
  t.LE<int64_t>(8);
  REQUIRE(bytes.size() > tail.size());
  CHECK(bytes.substr(bytes.size() - tail.size()) == tail);
}

}  // namespace
}  // namespace rdmq::protocol
