// ACLs on the control path and the one-sided data path (authorizer.enabled), against a broker in
// this process, on shm and tcp:
//   - users who log in with SCRAM may do exactly what their bindings allow: without Write no
//     produce, without Read no consume, without Delete no delete, without Create no create; the
//     lists show only what they may describe; users and ACLs are the cluster's (Alter/Describe);
//     a super user may do everything;
//   - removing a binding ends what it allowed at once: a producer's lease (its records then fail
//     with TOPIC_AUTHORIZATION_FAILED, nothing more reaches the log), a consumer's read grant;
//   - a raw one-sided client (no client library: its own WRITEs and READs) loses its WRITE and
//     READ access the moment its binding goes (also on verbs, in the Soft-RoCE VM: memory
//     windows invalidated);
//   - a deleted user's connections are cut off.
#include <catch2/catch.hpp>

#include "e2e_util.h"
#include "inproc_broker.h"
#include "rdmq/common/coding.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/client.h"
#include "rdmq/storage/record_batch.h"
#include "security_util.h"

namespace rdmq::broker::test {
namespace {

using namespace std::chrono_literals;
using metadata::AclBinding;
using metadata::AclOperation;
using metadata::AclPatternType;
using metadata::AclPermission;
using metadata::AclResourceType;
using protocol::Api;
using protocol::WireError;

AclBinding Allow(const std::string& principal, AclOperation op, AclResourceType type, const std::string& name,
                 AclPatternType pattern = AclPatternType::kLiteral) {
  return {principal, AclPermission::kAllow, op, type, pattern, name};
}

client::AclBinding ToClient(const AclBinding& b) {
  return {b.principal,
          metadata::Name(b.permission),
          metadata::Name(b.operation),
          metadata::Name(b.resource_type),
          metadata::Name(b.pattern_type),
          b.resource_name};
}

BrokerConfig SecureConfig(const rdmq::test::TempDir& dir, const std::string& fabric, bool logins) {
  BrokerConfig cfg = TestConfig(dir, fabric);
  if (logins) cfg.rpc_sasl_mechanisms = "SCRAM-SHA-256";
  cfg.authorizer_enabled = true;
  cfg.super_users = "User:admin";
  cfg.lease_ms = 2000;
  return cfg;
}

std::unique_ptr<client::AdminClient> Admin(const client::ClientOptions& o) {
  auto a = client::AdminClient::Connect(o);
  REQUIRE_OK(a);
  return std::move(*a);
}

std::unique_ptr<producer::Producer> ProducerOf(const client::ClientOptions& o) {
  producer::ProducerConfig pc;
  pc.client = o;
  pc.delivery_timeout = 10s;
  auto p = producer::Producer::Create(pc);
  REQUIRE_OK(p);
  return std::move(*p);
}

std::unique_ptr<consumer::Consumer> ConsumerOf(const client::ClientOptions& o, const std::string& topic) {
  consumer::ConsumerConfig cc;
  cc.client = o;
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  REQUIRE_OK((*c)->Assign({{topic, 0}}));
  return std::move(*c);
}

// Why `opts` cannot consume `topic`: the error of Assign, or else of Poll (OK if it can).
Status ConsumeRefusal(const client::ClientOptions& o, const std::string& topic) {
  consumer::ConsumerConfig cc;
  cc.client = o;
  auto c = consumer::Consumer::Create(cc);
  REQUIRE_OK(c);
  RDMQ_RETURN_IF_ERROR((*c)->Assign({{topic, 0}}));
  for (int i = 0; i < 10; ++i) RDMQ_RETURN_IF_ERROR((*c)->Poll(50ms).status());
  return Status::Ok();
}

// Sends `n` records and returns the first failure (OK when all were acknowledged).
Status SendAll(producer::Producer& p, const std::string& topic, int n, const std::string& prefix) {
  std::vector<producer::SendFuture> fs;
  for (int i = 0; i < n; ++i)
    fs.push_back(p.Send({.topic = topic, .partition = 0, .value = prefix + std::to_string(i)}));
  (void)p.Flush(15s);
  for (auto& f : fs) {
    auto r = f.get();
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

// Polls until `want` records arrived, an error, or 10 s.
Result<size_t> PollAll(consumer::Consumer& c, size_t want) {
  size_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (got < want && std::chrono::steady_clock::now() < deadline) {
    RDMQ_ASSIGN_OR_RETURN(auto recs, c.Poll(100ms));
    got += recs.size();
  }
  return got;
}

int64_t HighWatermark(client::AdminClient& admin, const std::string& topic) {
  auto d = admin.DescribeTopic(topic);
  REQUIRE_OK(d);
  REQUIRE(d->partitions.size() == 1);
  return d->partitions[0].high_watermark;
}

[[maybe_unused]] void UsersTest(const std::string& fabric) {
  rdmq::test::TempDir dir;
  Provision(dir, {"admin", "alice", "bob", "carol"});
  auto b = Broker::Start(SecureConfig(dir, fabric, true));
  REQUIRE_OK(b);
  const std::string control = (*b)->control_address();
  const auto admin_opts = As(control, "admin", "admin-secret");
  const auto alice_opts = As(control, "alice", "alice-secret");
  const auto bob_opts = As(control, "bob", "bob-secret");
  auto admin = Admin(admin_opts);
  REQUIRE_OK(admin->CreateTopic("orders", {{"partitions", "1"}}));
  REQUIRE_OK(admin->CreateTopic("secret", {{"partitions", "1"}}));

  // Without any binding alice may do nothing, and is told why.
  auto alice = Admin(alice_opts);
  {
    auto made = alice->CreateTopic("mine", {});
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().is(WireError::kTopicAuthorizationFailed));
    CHECK(made.status().ToString().find("User:alice may not create topic 'mine'") != std::string::npos);
    auto listed = alice->ListTopics();
    REQUIRE_OK(listed);
    CHECK(listed->empty());
    CHECK(alice->DescribeTopic("orders").status().is(WireError::kTopicAuthorizationFailed));
    CHECK(alice->DeleteTopic("orders").is(WireError::kTopicAuthorizationFailed));
    CHECK(alice->AlterTopic("orders", {{"retention.ms", "1000"}})
              .status()
              .is(WireError::kTopicAuthorizationFailed));
    CHECK(alice->ListUsers().status().is(WireError::kClusterAuthorizationFailed));
    CHECK(alice->ListAcls().status().is(WireError::kClusterAuthorizationFailed));
    const AclBinding self = Allow("User:alice", AclOperation::kAll, AclResourceType::kTopic, "*");
    CHECK(alice->CreateAcls({ToClient(self)}).status().is(WireError::kClusterAuthorizationFailed));
    CHECK(alice->ListGroups().status().ok());  // filtered, not refused
    // A producer needs an id, which only a user that may write some topic gets (Kafka's rule).
    producer::ProducerConfig pc;
    pc.client = alice_opts;
    auto p = producer::Producer::Create(pc);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().is(WireError::kClusterAuthorizationFailed));
    CHECK(ConsumeRefusal(alice_opts, "orders").is(WireError::kTopicAuthorizationFailed));
  }
  CHECK(HighWatermark(*admin, "orders") == 0);

  // Bindings: alice writes orders and deletes secret; bob reads orders and writes topics named
  // bob-*; carol may create topics named carol-*; a bad binding is refused and stores nothing.
  const std::vector<AclBinding> acls = {
      Allow("User:alice", AclOperation::kWrite, AclResourceType::kTopic, "orders"),
      Allow("User:alice", AclOperation::kDelete, AclResourceType::kTopic, "secret"),
      Allow("User:bob", AclOperation::kRead, AclResourceType::kTopic, "orders"),
      Allow("User:bob", AclOperation::kWrite, AclResourceType::kTopic, "bob-", AclPatternType::kPrefixed),
      Allow("User:carol", AclOperation::kCreate, AclResourceType::kTopic, "carol-",
            AclPatternType::kPrefixed)};
  std::vector<client::AclBinding> wire;
  for (const auto& a : acls) wire.push_back(ToClient(a));
  auto bad = wire;
  bad.push_back({"alice", "allow", "read", "topic", "literal", "orders"});  // no "User:"
  CHECK(admin->CreateAcls(bad).status().is(WireError::kInvalidAcl));
  auto none = admin->ListAcls();
  REQUIRE_OK(none);
  CHECK(none->empty());
  auto added = admin->CreateAcls(wire);
  REQUIRE_OK(added);
  CHECK(*added == 5);
  auto again = admin->CreateAcls(wire);
  REQUIRE_OK(again);
  CHECK(*again == 0);  // stored already
  auto listed = admin->ListAcls();
  REQUIRE_OK(listed);
  CHECK(listed->size() == 5);

  // alice: produces to orders, sees it (Write implies Describe), cannot read it or secret.
  auto ap = ProducerOf(alice_opts);
  REQUIRE_OK(SendAll(*ap, "orders", 100, "a"));
  CHECK(HighWatermark(*admin, "orders") == 100);
  auto alice_topics = alice->ListTopics();
  REQUIRE_OK(alice_topics);
  REQUIRE(alice_topics->size() == 2);  // orders (write) and secret (delete): both imply describe
  CHECK(ConsumeRefusal(alice_opts, "orders").is(WireError::kTopicAuthorizationFailed));
  // bob: reads orders, cannot write it (but has a producer: he may write bob-*).
  auto bc = ConsumerOf(bob_opts, "orders");
  auto got = PollAll(*bc, 100);
  REQUIRE_OK(got);
  CHECK(*got == 100);
  {
    auto p = ProducerOf(bob_opts);
    CHECK(SendAll(*p, "orders", 1, "b").is(WireError::kTopicAuthorizationFailed));
  }
  // carol: creates carol-1, not other names.
  auto carol = Admin(As(control, "carol", "carol-secret"));
  CHECK_OK(carol->CreateTopic("carol-1", {}));
  CHECK(carol->CreateTopic("other", {}).status().is(WireError::kTopicAuthorizationFailed));
  // Delete: alice deletes secret, not orders.
  CHECK(alice->DeleteTopic("orders").is(WireError::kTopicAuthorizationFailed));
  CHECK_OK(alice->DeleteTopic("secret"));

  // Revocation ends what the bindings allowed, at once: alice's lease and bob's read grant.
  auto removed = admin->DeleteAcls({wire[0], wire[2]});
  REQUIRE_OK(removed);
  CHECK(*removed == 2);
  CHECK(SendAll(*ap, "orders", 10, "late").is(WireError::kTopicAuthorizationFailed));
  CHECK(HighWatermark(*admin, "orders") == 100);  // nothing of alice's after the revocation
  auto after = PollAll(*bc, 1);
  CHECK(after.status().is(WireError::kTopicAuthorizationFailed));

  // A deleted user's connections are cut off, and it cannot log in again.
  REQUIRE_OK(admin->DeleteUser("alice"));
  auto cut = alice->ListTopics();
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().is(WireError::kAuthenticationFailed));
}

// A client that speaks the protocol itself: Hello, the data handshake, raw one-sided operations.
struct RawClient {
  std::unique_ptr<fabric::Fabric> fab;
  std::unique_ptr<rpc::Client> rpc;
  std::unique_ptr<fabric::CompletionQueue> send_cq, recv_cq;
  std::unique_ptr<fabric::Endpoint> ep;
  std::unique_ptr<fabric::Region> buf;  // 64 KiB: the ack block at 0, READ/WRITE staging after it

  template <class Resp, class Req>
  Result<Resp> Call(Api api, const Req& req) {
    RDMQ_ASSIGN_OR_RETURN(std::string raw, rpc->Call(static_cast<uint16_t>(api), protocol::Encode(req), 10s));
    return protocol::DecodeResponse<Resp>(std::as_bytes(std::span(raw)));
  }
  // One operation on `remote`, waited for.
  Status Op(fabric::Opcode op, const fabric::RemoteRegion& remote, uint64_t offset, size_t len) {
    fabric::WorkRequest wr;
    wr.opcode = op;
    wr.tag = 7;
    wr.signaled = true;
    wr.local = {buf->data() + 4096, len, buf.get()};
    wr.remote = &remote;
    wr.remote_offset = offset;
    RDMQ_RETURN_IF_ERROR(ep->Post({&wr, 1}));
    fabric::Completion wc[4];
    for (int i = 0; i < 10000; ++i) {
      const size_t n = send_cq->Poll(wc);
      for (size_t k = 0; k < n; ++k) {
        if (wc[k].tag == 7) return wc[k].status ? Status(wc[k].status, "one-sided operation") : Status::Ok();
      }
      (void)send_cq->Wait(1ms);
    }
    return Status(Errc::kTimeout, "no completion");
  }
};

fabric::Provider ProviderOf(const std::string& fabric) {
  if (fabric == "verbs") return fabric::Provider::kVerbs;
  return fabric == "tcp" ? fabric::Provider::kTcp : fabric::Provider::kShm;
}

RawClient Connect(const std::string& fabric, const std::string& control) {
  RawClient c;
  fabric::FabricOptions fo;
  fo.provider = ProviderOf(fabric);
  auto fab = fabric::Fabric::Open(fo);
  REQUIRE_OK(fab);
  c.fab = std::move(*fab);
  auto rpc = rpc::Client::Connect(*c.fab, control, {});
  REQUIRE_OK(rpc);
  c.rpc = std::move(*rpc);
  auto hello = c.Call<protocol::HelloResponse>(Api::kHello, protocol::HelloRequest{"raw"});
  REQUIRE_OK(hello);
  auto s = c.fab->CreateCompletionQueue(64);
  auto r = c.fab->CreateCompletionQueue(64);
  REQUIRE_OK(s);
  REQUIRE_OK(r);
  c.send_cq = std::move(*s);
  c.recv_cq = std::move(*r);
  fabric::EndpointOptions eo;
  eo.send_cq = c.send_cq.get();
  eo.recv_cq = c.recv_cq.get();
  auto ep = c.fab->Connect(hello->data_address, eo);
  REQUIRE_OK(ep);
  c.ep = std::move(*ep);
  std::byte id[protocol::kDataHelloSize];
  coding::StoreLE<uint64_t>(id, hello->client_id);
  coding::StoreLE<uint64_t>(id + 8, hello->data_token);
  REQUIRE_OK(c.ep->SendControl(id));
  auto reply = c.ep->RecvControl(10s);
  REQUIRE_OK(reply);
  auto buf = c.fab->Allocate(64 << 10, fabric::kLocalWrite | fabric::kRemoteWrite);
  REQUIRE_OK(buf);
  c.buf = std::move(*buf);
  return c;
}

std::unique_ptr<fabric::RemoteRegion> AttachTo(RawClient& c, const std::string& encoded) {
  auto d = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(encoded)));
  REQUIRE_OK(d);
  auto r = c.ep->Attach(*d);
  REQUIRE_OK(r);
  return std::move(*r);
}

void RawRevocationTest(const std::string& fabric) {
  rdmq::test::TempDir dir;
  // No logins here: every client is ANONYMOUS, which may administer ACLs and use topic t.
  Provision(dir, {},
            {Allow("User:ANONYMOUS", AclOperation::kAll, AclResourceType::kCluster, "cluster"),
             Allow("User:ANONYMOUS", AclOperation::kWrite, AclResourceType::kTopic, "t"),
             Allow("User:ANONYMOUS", AclOperation::kRead, AclResourceType::kTopic, "t"),
             Allow("User:ANONYMOUS", AclOperation::kCreate, AclResourceType::kTopic, "t")});
  BrokerConfig cfg = SecureConfig(dir, fabric, false);
  if (fabric == "verbs") {
    cfg.listen_control = rdmq::test::ListenHost(fabric) + ":0";
    cfg.listen_data = rdmq::test::ListenHost(fabric) + ":0";
    cfg.data_spin_us = 100;  // the Soft-RoCE VM has little CPU to spare
    // The VM's RDMA address is not loopback; the ACLs, not a login, are what this test is about.
    cfg.allow_anonymous = true;
  }
  auto b = Broker::Start(cfg);
  REQUIRE_OK(b);
  const std::string control = (*b)->control_address();
  client::ClientOptions o;
  o.bootstrap = control;
  auto admin = Admin(o);
  REQUIRE_OK(admin->CreateTopic("t", {{"partitions", "1"}}));
  {
    auto p = ProducerOf(o);  // some records for the readers
    REQUIRE_OK(SendAll(*p, "t", 10, "r"));
  }
  // On verbs a refused one-sided operation is a remote access error, which ends the connection
  // (fabric.md): the writer and the reader are separate clients.
  RawClient writer = Connect(fabric, control);
  RawClient reader = Connect(fabric, control);

  // A lease: WRITE access to the active segment from the committed end.
  protocol::OpenProduceRequest op;
  op.topic = "t";
  op.ack_region.bytes = writer.buf->Descriptor().Encode();
  auto lease = writer.Call<protocol::LeaseResponse>(Api::kOpenProduce, op);
  REQUIRE_OK(lease);
  auto window = AttachTo(writer, lease->segment.region.bytes);
  const uint64_t at = lease->segment.RemoteOffset(lease->write_position);
  REQUIRE_OK(writer.Op(fabric::Opcode::kWrite, *window, at, 64));
  // Read grants: the slot and the segment.
  auto consume =
      reader.Call<protocol::OpenConsumeResponse>(Api::kOpenConsume, protocol::PartitionRequest{"t"});
  REQUIRE_OK(consume);
  REQUIRE(consume->segments.size() == 1);
  auto slot = AttachTo(reader, consume->slot.bytes);
  auto seg = AttachTo(reader, consume->segments[0].region.bytes);
  const uint64_t data = consume->segments[0].data_offset;
  REQUIRE_OK(reader.Op(fabric::Opcode::kRead, *slot, 0, 64));
  REQUIRE_OK(reader.Op(fabric::Opcode::kRead, *seg, data, 64));

  // Write goes: the lease ends at once; the window refuses the next WRITE; no lease again.
  REQUIRE_OK(admin->DeleteAcls(
      {ToClient(Allow("User:ANONYMOUS", AclOperation::kWrite, AclResourceType::kTopic, "t"))}));
  const Status w = writer.Op(fabric::Opcode::kWrite, *window, at, 64);
  INFO("WRITE after the revocation: " << w.ToString());
  CHECK_FALSE(w.ok());
  if (fabric != "verbs") CHECK(w.is(Errc::kPermissionDenied));
  auto renew =
      writer.Call<protocol::LeaseResponse>(Api::kRenewLease, protocol::LeaseRequest{lease->lease_id, 0});
  CHECK_FALSE(renew.ok());
  auto reopen = writer.Call<protocol::LeaseResponse>(Api::kOpenProduce, op);
  CHECK(reopen.status().is(WireError::kTopicAuthorizationFailed));
  // Reading still goes: Read was not taken away.
  CHECK_OK(reader.Op(fabric::Opcode::kRead, *seg, data, 64));

  // Read goes: the read grants end; READs through them fail; no new location is handed out.
  REQUIRE_OK(admin->DeleteAcls(
      {ToClient(Allow("User:ANONYMOUS", AclOperation::kRead, AclResourceType::kTopic, "t"))}));
  const Status r = reader.Op(fabric::Opcode::kRead, *seg, data, 64);
  INFO("READ after the revocation: " << r.ToString());
  CHECK_FALSE(r.ok());
  if (fabric != "verbs") {
    CHECK(r.is(Errc::kPermissionDenied));
    CHECK(reader.Op(fabric::Opcode::kRead, *slot, 0, 64).is(Errc::kPermissionDenied));
  }
  auto again = reader.Call<protocol::OpenConsumeResponse>(Api::kOpenConsume, protocol::PartitionRequest{"t"});
  CHECK(again.status().is(WireError::kTopicAuthorizationFailed));
  auto get = reader.Call<protocol::GetSegmentResponse>(Api::kGetSegment, protocol::GetSegmentRequest{"t"});
  CHECK(get.status().is(WireError::kTopicAuthorizationFailed));
}

}  // namespace

#ifndef RDMQ_ACL_VERBS
TEST_CASE("acl (shm): users may do what their bindings allow, until a binding goes",
          "[broker][security][acl]") {
  UsersTest("shm");
}

TEST_CASE("acl (tcp): users may do what their bindings allow, until a binding goes",
          "[broker][security][acl]") {
  UsersTest("tcp");
}

TEST_CASE("acl (shm): a removed binding cuts a raw one-sided client's WRITE and READ at once",
          "[broker][security][acl]") {
  RawRevocationTest("shm");
}

TEST_CASE("acl (tcp): a removed binding cuts a raw one-sided client's WRITE and READ at once",
          "[broker][security][acl]") {
  RawRevocationTest("tcp");
}
#else
TEST_CASE("acl (verbs): a removed binding cuts a raw one-sided client's WRITE and READ at once",
          "[broker][security][acl][verbs]") {
  if (!rdmq::test::VerbsAvailable()) RDMQ_SKIP("no RDMA device (run tests/verbs/softroce-vm.sh)");
  RawRevocationTest("verbs");
}
#endif

}  // namespace rdmq::broker::test
