// SASL on the control path (rpc.sasl.enabled.mechanisms), against a broker in this process: a
// user made in the metadata store before the broker starts (as `rdmq user add --data-dir` does);
// clients that log in with SCRAM-SHA-256 or SCRAM-SHA-512 create topics, produce and consume;
// no credentials, a wrong password, an unknown user and a mechanism not enabled are refused with
// clear errors; a client that skips the login gets AUTHENTICATION_REQUIRED for every request and
// its data handshake is refused; a data handshake with another session's id but not its token is
// refused.
#include <catch2/catch.hpp>

#include "inproc_broker.h"
#include "rdmq/auth/scram.h"
#include "rdmq/common/coding.h"
#include "rdmq/consumer/consumer.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/metadata/store.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/rpc/client.h"
#include "security_util.h"
#include "support/test_util.h"

namespace rdmq::broker::test {
namespace {

using namespace std::chrono_literals;
using protocol::Api;
using protocol::WireError;

// `alice` with both mechanisms, written to the broker's metadata store before it starts.
void AddAlice(const rdmq::test::TempDir& dir) { Provision(dir, {"alice"}); }

BrokerConfig LoginConfig(const rdmq::test::TempDir& dir, const std::string& fabric) {
  BrokerConfig cfg = TestConfig(dir, fabric);
  cfg.rpc_sasl_mechanisms = "SCRAM-SHA-256,SCRAM-SHA-512";
  return cfg;
}

std::string Refusal(const client::ClientOptions& o) {
  auto a = client::AdminClient::Connect(o);
  return a.ok() ? std::string("connected") : a.status().ToString();
}

void LoginTest(const std::string& fabric) {
  rdmq::test::TempDir dir;
  AddAlice(dir);
  auto b = Broker::Start(LoginConfig(dir, fabric));
  REQUIRE_OK(b);
  const std::string control = (*b)->control_address();

  // Refused, each with a message that says what to do.
  CHECK(Refusal(As(control, "", "")).find("asks for a login") != std::string::npos);
  const std::string wrong = Refusal(As(control, "alice", "not-it"));
  CHECK(wrong.find("AUTHENTICATION_FAILED") != std::string::npos);
  CHECK(wrong.find("unknown user or wrong password") != std::string::npos);
  CHECK(Refusal(As(control, "mallory", "alice-secret")) == Refusal(As(control, "mallory", "x")));
  CHECK(Refusal(As(control, "mallory", "alice-secret")).find("unknown user or wrong password") !=
        std::string::npos);

  // Logged in: administration, produce and consume.
  for (const std::string mechanism : {"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
    INFO(mechanism);
    const auto opts = As(control, "alice", "alice-secret", mechanism);
    auto admin = client::AdminClient::Connect(opts);
    REQUIRE_OK(admin);
    const std::string topic = mechanism == "SCRAM-SHA-256" ? "t256" : "t512";
    REQUIRE_OK((*admin)->CreateTopic(topic, {{"partitions", "1"}}));
    producer::ProducerConfig pc;
    pc.client = opts;
    auto p = producer::Producer::Create(pc);
    REQUIRE_OK(p);
    for (int i = 0; i < 100; ++i) {
      REQUIRE_OK((*p)->Send({.topic = topic, .partition = 0, .value = "v" + std::to_string(i)}, nullptr));
    }
    REQUIRE_OK((*p)->Flush(30s));
    consumer::ConsumerConfig cc;
    cc.client = opts;
    auto c = consumer::Consumer::Create(cc);
    REQUIRE_OK(c);
    REQUIRE_OK((*c)->Assign({{topic, 0}}));
    size_t got = 0;
    for (int round = 0; round < 100 && got < 100; ++round) {
      auto recs = (*c)->Poll(200ms);
      REQUIRE_OK(recs);
      for (const auto& rec : *recs) CHECK(rec.value == "v" + std::to_string(got++));
    }
    CHECK(got == 100);
  }

  // A client that says Hello and skips the login: refused for everything, data handshake too.
  fabric::FabricOptions fo;
  fo.provider = fabric == "tcp" ? fabric::Provider::kTcp : fabric::Provider::kShm;
  auto fab = fabric::Fabric::Open(fo);
  REQUIRE_OK(fab);
  auto rpc = rpc::Client::Connect(**fab, control, {});
  REQUIRE_OK(rpc);
  const auto call = [&](Api api, const std::string& body) {
    auto raw = (*rpc)->Call(static_cast<uint16_t>(api), body, 10s);
    REQUIRE_OK(raw);
    return *raw;
  };
  const std::string hello_raw = call(Api::kHello, protocol::Encode(protocol::HelloRequest{"skipper"}));
  auto hello = protocol::DecodeResponse<protocol::HelloResponse>(std::as_bytes(std::span(hello_raw)));
  REQUIRE_OK(hello);
  CHECK(hello->sasl_mechanisms == std::vector<std::string>{"SCRAM-SHA-256", "SCRAM-SHA-512"});
  for (const auto& [api, body] : std::vector<std::pair<Api, std::string>>{
           {Api::kListTopics, protocol::Encode(protocol::Empty{})},
           {Api::kCreateTopic, protocol::Encode(protocol::CreateTopicRequest{"sneaky", {}})},
           {Api::kDeleteTopic, protocol::Encode(protocol::TopicNameRequest{"t256"})},
           {Api::kListUsers, protocol::Encode(protocol::Empty{})}}) {
    INFO(protocol::ApiName(api));
    const std::string raw = call(api, body);
    auto r = protocol::DecodeResponse<protocol::Empty>(std::as_bytes(std::span(raw)));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().is(WireError::kAuthenticationRequired));
  }
  // A mechanism the broker does not take.
  const std::string plain_raw =
      call(Api::kSaslAuthenticate, protocol::Encode(protocol::SaslAuthenticateRequest{"PLAIN", "x"}));
  auto plain =
      protocol::DecodeResponse<protocol::SaslAuthenticateResponse>(std::as_bytes(std::span(plain_raw)));
  REQUIRE_FALSE(plain.ok());
  CHECK(plain.status().ToString().find("not enabled") != std::string::npos);

  const auto handshake = [&](uint64_t client_id, uint64_t token) {
    fabric::EndpointOptions eo;
    auto cq_s = (*fab)->CreateCompletionQueue(64);
    auto cq_r = (*fab)->CreateCompletionQueue(64);
    REQUIRE_OK(cq_s);
    REQUIRE_OK(cq_r);
    eo.send_cq = cq_s->get();
    eo.recv_cq = cq_r->get();
    auto ep = (*fab)->Connect(hello->data_address, eo);
    REQUIRE_OK(ep);
    std::byte id[protocol::kDataHelloSize];
    coding::StoreLE<uint64_t>(id, client_id);
    coding::StoreLE<uint64_t>(id + 8, token);
    REQUIRE_OK((*ep)->SendControl(id));
    auto reply = (*ep)->RecvControl(10s);
    REQUIRE_OK(reply);
    coding::Reader rd(std::as_bytes(std::span(reply->data(), reply->size())));
    protocol::ResponseHeader h;
    REQUIRE_OK(protocol::DecodeFrom(&rd, &h));
    return h;
  };
  const protocol::ResponseHeader unauth = handshake(hello->client_id, hello->data_token);
  CHECK(unauth.error == static_cast<uint16_t>(WireError::kAuthenticationRequired));
  const protocol::ResponseHeader forged = handshake(hello->client_id, hello->data_token + 1);
  CHECK(forged.error == static_cast<uint16_t>(WireError::kInvalidRequest));
  CHECK(forged.message.find("token") != std::string::npos);
}

}  // namespace

TEST_CASE("rpc login (shm): SCRAM users are served, everyone else is refused", "[broker][security][sasl]") {
  LoginTest("shm");
}

TEST_CASE("rpc login (tcp): SCRAM users are served, everyone else is refused", "[broker][security][sasl]") {
  LoginTest("tcp");
}

}  // namespace rdmq::broker::test
