// Selects the provider the conformance suite runs on in this binary: tcp with TLS on every
// connection, both sides authenticated by certificates of the test CA (support/pki.h).
#include "conformance.h"
#include "support/pki.h"

namespace rdmq::fabric::test {
const Provider kProvider = Provider::kTcp;

namespace {
const rdmq::test::Pki& TestCa() {
  static const rdmq::test::Pki pki;
  return pki;
}
}  // namespace

FabricOptions SuiteOptions(bool listening) {
  const rdmq::test::Pki& pki = TestCa();
  FabricOptions o = PlainOptions();
  o.tls.enabled = true;
  o.tls.ca = pki("ca.pem");
  if (listening) {
    o.tls.certificate = pki("server.pem");
    o.tls.key = pki("server.key");
    o.tls.client_auth = TlsOptions::ClientAuth::kRequired;
  } else {
    o.tls.certificate = pki("client.pem");
    o.tls.key = pki("client.key");
  }
  return o;
}

std::string PeerProvider() { return "tcp+tls=" + TestCa().dir.str(); }
}  // namespace rdmq::fabric::test
