// The tools against a tcp broker with TLS on its control and data listeners
// (rpc.security.protocol=SSL), with the test CA of support/pki.h: `-X security.protocol=SSL -X
// ssl.ca.location=...` is all they need; without it, or trusting another CA, they fail with a
// message that says what to set.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/cli_fixture.h"
#include "support/pki.h"

namespace rdmq::test {

TEST_CASE("rpc.security.protocol=SSL: the tools connect with -X security.protocol=SSL and ssl.ca.location",
          "[e2e][cli][tls]") {
  Pki pki;
  Fixture f({"--set", "fabric=tcp", "--set", "listen.control=127.0.0.1:0", "--set", "listen.data=127.0.0.1:0",
             "--set", "rpc.security.protocol=SSL", "--set", "ssl.certificate.location=" + pki("server.pem"),
             "--set", "ssl.key.location=" + pki("server.key")});
  const std::vector<std::string> tls = {"-X", "security.protocol=SSL", "-X",
                                        "ssl.ca.location=" + pki("ca.pem")};
  const auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  REQUIRE_RUN(f.Rdmq(with({"topic", "create", "secure", "--partitions", "1"}, tls)), 0);
  REQUIRE_RUN(f.Produce(with({"secure"}, tls), "one\ntwo\nthree\n"), 0);
  const RunResult c = f.Consume(with({"-e", "secure"}, tls));
  REQUIRE_RUN(c, 0);
  CHECK(c.out == "one\ntwo\nthree\n");

  RunResult r = f.Rdmq({"topic", "list"});
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "is security.protocol=SSL needed?"));
  r = f.Rdmq(
      {"topic", "list", "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + pki("rogue-ca.pem")});
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "certificate verify failed"));
  // The broker logged both refusals, with the reason.
  CHECK(Contains(f.broker().Log(), "TLS failed"));
}

}  // namespace rdmq::test
