// TLS on the tcp provider (FabricOptions.tls), with the test CA of support/pki.h: who gets an
// endpoint and who is refused, and that a refusal says why. (The conformance suite runs whole
// over TLS in fabric_conformance_tcp_tls.)
//
// Every refused client is checked twice: its Connect fails, and the listener hands out no
// endpoint for it (Accept times out) while it still serves a good client afterwards.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "rdmq/common/coding.h"
#include "rdmq/fabric/fabric.h"
#include "support/pki.h"
#include "support/test_util.h"

namespace rdmq::fabric::test {
namespace {

using namespace std::chrono_literals;
using ClientAuth = TlsOptions::ClientAuth;

struct Listening {
  std::unique_ptr<Fabric> fabric;
  std::unique_ptr<CompletionQueue> cq;
};

TlsOptions ServerTls(const rdmq::test::Pki& pki, ClientAuth auth, const std::string& cert = "server") {
  TlsOptions t;
  t.enabled = true;
  t.certificate = pki(cert + ".pem");
  t.key = pki(cert + ".key");
  t.ca = pki("ca.pem");
  t.client_auth = auth;
  return t;
}

// A client trusting `ca`, presenting `cert` (none if empty).
TlsOptions ClientTls(const rdmq::test::Pki& pki, const std::string& ca, const std::string& cert = "") {
  TlsOptions t;
  t.enabled = true;
  t.ca = pki(ca);
  if (!cert.empty()) {
    t.certificate = pki(cert + ".pem");
    t.key = pki(cert + ".key");
  }
  return t;
}

Listening Listen(const TlsOptions& tls) {
  FabricOptions o;
  o.provider = Provider::kTcp;
  o.listen = "127.0.0.1:0";
  o.tls = tls;
  auto f = Fabric::Open(o);
  REQUIRE_OK(f);
  Listening l;
  l.fabric = std::move(f).value();
  auto cq = l.fabric->CreateCompletionQueue(64);
  REQUIRE_OK(cq);
  l.cq = std::move(cq).value();
  return l;
}

// Connects a client with `tls` to `server` while the server accepts for a while: the client's
// endpoint (or why it failed), and whether the server handed out an endpoint. A connected pair
// exchanges a control message each way first.
struct Outcome {
  Status client;
  bool accepted = false;
  std::string server_cn, client_cn;  // peer_identity() of each side's endpoint: whom it verified
};
Outcome Try(Listening& server, const TlsOptions& tls, const std::string& address = "") {
  FabricOptions o;
  o.provider = Provider::kTcp;
  o.tls = tls;
  auto f = Fabric::Open(o);
  REQUIRE_OK(f);
  auto cq = (*f)->CreateCompletionQueue(64);
  REQUIRE_OK(cq);
  EndpointOptions eo;
  eo.send_cq = cq->get();
  eo.connect_timeout = 5s;
  EndpointOptions so;
  so.send_cq = server.cq.get();
  // The server accepts until it has an endpoint, or until a second after the client's Connect
  // returned (time for a refused client's connection to turn up, if it wrongly would).
  Result<std::unique_ptr<Endpoint>> accepted = Status(Errc::kInternal, "accept did not run");
  std::atomic<bool> connected{false};
  std::thread t([&] {
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    std::optional<std::chrono::steady_clock::time_point> grace;
    for (;;) {
      accepted = server.fabric->Accept(so, 100ms);
      if (accepted.ok()) return;
      const auto now = std::chrono::steady_clock::now();
      if (connected.load() && !grace) grace = now + 1s;
      if ((grace && now > *grace) || now > give_up) return;
    }
  });
  auto ep = (*f)->Connect(address.empty() ? server.fabric->address() : address, eo);
  connected = true;
  t.join();
  Outcome out{ep.status(), accepted.ok(), {}, {}};
  if (ep.ok()) out.server_cn = (*ep)->peer_identity();
  if (accepted.ok()) out.client_cn = (*accepted)->peer_identity();
  if (ep.ok() && accepted.ok()) {
    REQUIRE_OK((*ep)->SendControl(coding::AsBytes(std::string("ping"))));
    auto got = (*accepted)->RecvControl(10s);
    REQUIRE_OK(got);
    CHECK(*got == "ping");
    REQUIRE_OK((*accepted)->SendControl(coding::AsBytes(std::string("pong"))));
    auto back = (*ep)->RecvControl(10s);
    REQUIRE_OK(back);
    CHECK(*back == "pong");
  }
  return out;
}

void CheckServed(Listening& server, const TlsOptions& tls, const std::string& address = "") {
  const Outcome o = Try(server, tls, address);
  INFO("client: " << o.client.ToString());
  CHECK(o.client.ok());
  CHECK(o.accepted);
}

// Refused: the client's Connect fails saying `says` (if given), and no endpoint is handed out.
void CheckRefused(Listening& server, const TlsOptions& tls, const std::string& says = "") {
  const Outcome o = Try(server, tls);
  INFO("client: " << o.client.ToString());
  CHECK_FALSE(o.client.ok());
  CHECK_FALSE(o.accepted);
  if (!says.empty()) CHECK(o.client.ToString().find(says) != std::string::npos);
}

}  // namespace

TEST_CASE("tls: a client trusting the CA is served, another CA, no TLS, a wrong name are refused",
          "[fabric][tls]") {
  rdmq::test::Pki pki;
  Listening server = Listen(ServerTls(pki, ClientAuth::kNone));
  CheckServed(server, ClientTls(pki, "ca.pem"));
  CHECK(server.fabric->address().starts_with("tcp:127.0.0.1:"));

  // A client that trusts another CA.
  const Outcome rogue = Try(server, ClientTls(pki, "rogue-ca.pem"));
  CHECK(rogue.client.is(FabricErrc::kTls));
  CHECK(rogue.client.ToString().find("certificate verify failed") != std::string::npos);
  CHECK_FALSE(rogue.accepted);
  // A client without TLS (OpenSSL closes without an alert: its hello does not look like TLS).
  CheckRefused(server, TlsOptions{});
  // The certificate names localhost and 127.0.0.1: another name is refused, unless the client
  // does not check names (it still checks the chain).
  TlsOptions other_name = ClientTls(pki, "ca.pem");
  other_name.server_name = "broker.example";
  CheckRefused(server, other_name, "mismatch");
  other_name.verify_name = false;
  CheckServed(server, other_name);
  // A DNS name the certificate holds, given instead of the IP address.
  TlsOptions by_name = ClientTls(pki, "ca.pem");
  by_name.server_name = "localhost";
  CheckServed(server, by_name);
  // Without verification anything goes (encryption only).
  TlsOptions blind = ClientTls(pki, "rogue-ca.pem");
  blind.verify_peer = false;
  CheckServed(server, blind);
  // Still serving after all of that.
  CheckServed(server, ClientTls(pki, "ca.pem"));
}

TEST_CASE("tls: a server certificate that does not name the address is refused", "[fabric][tls]") {
  rdmq::test::Pki pki;
  // client.pem names only "alice": dialled as 127.0.0.1, the client refuses it.
  Listening server = Listen(ServerTls(pki, ClientAuth::kNone, "client"));
  CheckRefused(server, ClientTls(pki, "ca.pem"), "IP address mismatch");
  TlsOptions alice = ClientTls(pki, "ca.pem");
  alice.server_name = "alice";
  CheckServed(server, alice);
}

TEST_CASE("tls: client certificates, required and requested", "[fabric][tls]") {
  rdmq::test::Pki pki;
  {
    Listening server = Listen(ServerTls(pki, ClientAuth::kRequired));
    CheckRefused(server, ClientTls(pki, "ca.pem"));                  // no certificate
    CheckRefused(server, ClientTls(pki, "ca.pem", "rogue-client"));  // one from another CA
    CheckServed(server, ClientTls(pki, "ca.pem", "client"));
    // Each side knows whom it verified: the client's CN (alice), the server's (localhost).
    const Outcome o = Try(server, ClientTls(pki, "ca.pem", "client"));
    CHECK(o.client_cn == "alice");
    CHECK(o.server_cn == "localhost");
  }
  {
    Listening server = Listen(ServerTls(pki, ClientAuth::kRequested));
    CheckServed(server, ClientTls(pki, "ca.pem"));
    CheckRefused(server, ClientTls(pki, "ca.pem", "rogue-client"));
    CheckServed(server, ClientTls(pki, "ca.pem", "client"));
    CHECK(Try(server, ClientTls(pki, "ca.pem")).client_cn.empty());  // none sent
    CHECK(Try(server, ClientTls(pki, "ca.pem", "client")).client_cn == "alice");
  }
  {
    // Not asked for, a client's certificate is neither sent nor reported; without TLS nothing is.
    Listening server = Listen(ServerTls(pki, ClientAuth::kNone));
    CHECK(Try(server, ClientTls(pki, "ca.pem", "client")).client_cn.empty());
    Listening plain = Listen(TlsOptions{});
    const Outcome o = Try(plain, TlsOptions{});
    CHECK(o.accepted);
    CHECK(o.client_cn.empty());
    CHECK(o.server_cn.empty());
  }
}

TEST_CASE("tls: a TLS client and a listener without TLS do not connect", "[fabric][tls]") {
  rdmq::test::Pki pki;
  Listening plain = Listen(TlsOptions{});
  const Outcome o = Try(plain, ClientTls(pki, "ca.pem"));
  INFO(o.client.ToString());
  CHECK_FALSE(o.client.ok());
  CHECK_FALSE(o.accepted);
  CheckServed(plain, TlsOptions{});
}

TEST_CASE("tls: settings that cannot work are refused at Open, naming the file", "[fabric][tls]") {
  rdmq::test::Pki pki;
  const auto open = [](const TlsOptions& t, bool listen, Provider p = Provider::kTcp) {
    FabricOptions o;
    o.provider = p;
    if (listen) o.listen = p == Provider::kShm ? "unix:/nonexistent/x.sock" : "127.0.0.1:0";
    o.tls = t;
    return Fabric::Open(o).status();
  };
  // TLS is tcp only.
  CHECK(open(ServerTls(pki, ClientAuth::kNone), false, Provider::kShm).is(Errc::kUnsupported));
  CHECK(open(ServerTls(pki, ClientAuth::kNone), false, Provider::kVerbs).is(Errc::kUnsupported));
  CHECK_OK(open(ServerTls(pki, ClientAuth::kNone), true));
  // A listener needs its certificate and key; client certificates need a CA.
  CHECK(open(ClientTls(pki, "ca.pem"), true).is(Errc::kInvalidArgument));
  TlsOptions no_ca = ServerTls(pki, ClientAuth::kRequired);
  no_ca.ca.clear();
  CHECK(open(no_ca, true).is(Errc::kInvalidArgument));
  // Files that are missing, not PEM, or a key that is not the certificate's.
  TlsOptions missing = ServerTls(pki, ClientAuth::kNone);
  missing.certificate = pki("nothing.pem");
  Status s = open(missing, true);
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find(pki("nothing.pem")) != std::string::npos);
  TlsOptions not_a_key = ServerTls(pki, ClientAuth::kNone);
  not_a_key.key = pki("ca.pem");
  s = open(not_a_key, true);
  CHECK(s.is(Errc::kInvalidArgument));
  CHECK(s.ToString().find(pki("ca.pem")) != std::string::npos);
  TlsOptions mismatched = ServerTls(pki, ClientAuth::kNone);
  mismatched.key = pki("client.key");
  s = open(mismatched, true);
  CHECK(s.ToString().find("does not match") != std::string::npos);
  TlsOptions bad_ca = ClientTls(pki, "nothing.pem");
  CHECK(open(bad_ca, false).ToString().find(pki("nothing.pem")) != std::string::npos);
  // A client certificate without its key.
  TlsOptions half = ClientTls(pki, "ca.pem", "client");
  half.key.clear();
  CHECK(open(half, false).is(Errc::kInvalidArgument));
}

}  // namespace rdmq::fabric::test
