// TLS on the Kafka listener (kafka.security.protocol=SSL), judged by kcat: a throwaway CA made by
// test_ca.sh; records produced and consumed over TLS; a client that trusts another CA, and a
// client speaking plain Kafka, refused; with ssl.client.auth=required, a client without a
// certificate or with one from another CA refused and one with the CA's certificate served (and
// such a listener may face the network without security.allow.anonymous); bad key files refused
// at start, naming the key.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/cli_fixture.h"
#include "kafka_e2e/pki.h"

namespace rdmq::test {
namespace {

std::vector<std::string> TlsBroker(const Pki& pki, const std::string& client_auth) {
  std::vector<std::string> a = {"--set", "kafka.security.protocol=SSL",
                                "--set", "ssl.certificate.location=" + pki("server.pem"),
                                "--set", "ssl.key.location=" + pki("server.key")};
  if (client_auth != "none") {
    a.insert(a.end(),
             {"--set", "ssl.client.auth=" + client_auth, "--set", "ssl.ca.location=" + pki("ca.pem")});
  }
  return a;
}

// kcat's options for TLS trusting `ca`, with a client certificate `client` (none if empty).
std::vector<std::string> Tls(const Pki& pki, const std::string& ca, const std::string& client = "") {
  std::vector<std::string> a = {"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + pki(ca)};
  if (!client.empty()) {
    a.insert(a.end(), {"-X", "ssl.certificate.location=" + pki(client + ".pem"), "-X",
                       "ssl.key.location=" + pki(client + ".key")});
  }
  return a;
}

}  // namespace

TEST_CASE("kcat over TLS produces and consumes, a client trusting another CA or without TLS is refused",
          "[e2e][kafka][kcat][tls]") {
  Pki pki;
  Fixture f(TlsBroker(pki, "none"));
  REQUIRE_RUN(f.Rdmq({"topic", "create", "secure", "--partitions", "1"}), 0);
  std::string lines;
  for (int i = 0; i < 200; ++i) lines += "tls-" + std::to_string(i) + "\n";
  REQUIRE_RUN(f.Kcat(With({"-P", "-t", "secure"}, Tls(pki, "ca.pem")), lines), 0);
  const RunResult c = f.Kcat(With({"-C", "-t", "secure", "-e", "-f", "%s\n"}, Tls(pki, "ca.pem")));
  REQUIRE_RUN(c, 0);
  CHECK(c.out == lines);
  // The same records through rdmq's own consumer (the one-sided path is not behind TLS).
  const RunResult own = f.Consume({"-e", "secure"});
  REQUIRE_RUN(own, 0);
  CHECK(own.out == lines);

  const RunResult rogue = f.Kcat(With({"-L", "-m", "3"}, Tls(pki, "rogue-ca.pem")), "", 30);
  CHECK(rogue.code != 0);
  CHECK(Contains(rogue.err, "certificate verify failed"));
  const RunResult plain = f.Kcat({"-L", "-m", "3"}, "", 30);
  CHECK(plain.code != 0);
  // The broker still serves TLS clients after both.
  REQUIRE_RUN(f.Kcat(With({"-L", "-m", "10"}, Tls(pki, "ca.pem"))), 0);
}

TEST_CASE("ssl.client.auth=required: only clients with a certificate from ssl.ca.location are served",
          "[e2e][kafka][kcat][tls]") {
  Pki pki;
  // Facing the network (0.0.0.0) without security.allow.anonymous: client certificates
  // authenticate every Kafka client.
  Fixture f(With(TlsBroker(pki, "required"), {"--set", "listen.kafka=0.0.0.0:0"}));
  const std::string port = f.kafka().substr(f.kafka().rfind(':') + 1);
  auto kcat = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/kcat", "-b", "127.0.0.1:" + port});
    return Run(args, "", 30);
  };
  const RunResult none = kcat(With({"-L", "-m", "3"}, Tls(pki, "ca.pem")));
  CHECK(none.code != 0);
  const RunResult rogue = kcat(With({"-L", "-m", "3"}, Tls(pki, "ca.pem", "rogue-client")));
  CHECK(rogue.code != 0);
  const RunResult good = kcat(With({"-L", "-m", "10"}, Tls(pki, "ca.pem", "client")));
  REQUIRE_RUN(good, 0);
  CHECK(Contains(good.out, "1 brokers"));
}

TEST_CASE("TLS settings that cannot work stop the broker at start, naming the key", "[e2e][kafka][tls]") {
  Pki pki;
  struct Case {
    std::vector<std::string> sets;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"kafka.security.protocol=SSL"}, "needs ssl.certificate.location and ssl.key.location"},
      {{"kafka.security.protocol=SSL", "ssl.certificate.location=" + pki("server.pem"),
        "ssl.key.location=" + pki("client.key")},
       "does not match the certificate"},
      {{"kafka.security.protocol=SSL", "ssl.certificate.location=" + pki("nope.pem"),
        "ssl.key.location=" + pki("server.key")},
       "ssl.certificate.location=" + pki("nope.pem")},
      {{"kafka.security.protocol=SSL", "ssl.certificate.location=" + pki("server.pem"),
        "ssl.key.location=" + pki("server.key"), "ssl.client.auth=required"},
       "needs ssl.ca.location"},
      {{"listen.kafka=0.0.0.0:0"}, "security.allow.anonymous=true"},
  };
  for (const auto& k : cases) CheckRefusedAtStart(pki("data"), k.sets, k.says);
}

}  // namespace rdmq::test
