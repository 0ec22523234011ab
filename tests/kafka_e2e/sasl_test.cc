// SASL on the Kafka listener (kafka.security.protocol=SASL_SSL / SASL_PLAINTEXT), judged by kcat
// (librdkafka): users made with `rdmq user add`; SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN logins
// produce and consume; a wrong password, an unknown user, a client that does not log in, and a
// mechanism the broker does not enable are refused; a deleted user can no longer log in; a SASL
// listener may face the network without security.allow.anonymous; PLAIN without TLS is refused
// at start.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_fixture.h"
#include "kafka_e2e/pki.h"

namespace rdmq::test {
namespace {

// kcat's options to log in as `user` with `password` by `mechanism`, over TLS trusting the test CA
// (pki given) or in the clear.
std::vector<std::string> Login(const Pki* pki, const std::string& mechanism, const std::string& user,
                               const std::string& password) {
  std::vector<std::string> a = {"-X", "sasl.mechanisms=" + mechanism, "-X", "sasl.username=" + user,
                                "-X", "sasl.password=" + password};
  if (pki != nullptr) {
    return With(a, {"-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + (*pki)("ca.pem")});
  }
  return With(a, {"-X", "security.protocol=sasl_plaintext"});
}

std::string Lines(const std::string& prefix, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += prefix + std::to_string(i) + "\n";
  return s;
}

}  // namespace

TEST_CASE(
    "kcat with SASL_SSL: SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN users produce and consume, "
    "wrong passwords and unknown users are refused",
    "[e2e][kafka][kcat][sasl]") {
  Pki pki;
  Fixture f({"--set", "kafka.security.protocol=SASL_SSL", "--set",
             "ssl.certificate.location=" + pki("server.pem"), "--set",
             "ssl.key.location=" + pki("server.key"), "--set",
             "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"});
  REQUIRE_RUN(f.Rdmq({"user", "add", "alice", "--password-file", "-"}, "alice-secret\n"), 0);
  REQUIRE_RUN(f.Rdmq({"topic", "create", "secure", "--partitions", "1"}), 0);

  const std::string a = Lines("sha256-", 100), b = Lines("sha512-", 100), c = Lines("plain-", 100);
  REQUIRE_RUN(f.Kcat(With({"-P", "-t", "secure"}, Login(&pki, "SCRAM-SHA-256", "alice", "alice-secret")), a),
              0);
  REQUIRE_RUN(f.Kcat(With({"-P", "-t", "secure"}, Login(&pki, "SCRAM-SHA-512", "alice", "alice-secret")), b),
              0);
  REQUIRE_RUN(f.Kcat(With({"-P", "-t", "secure"}, Login(&pki, "PLAIN", "alice", "alice-secret")), c), 0);
  const RunResult read = f.Kcat(With({"-C", "-t", "secure", "-e", "-f", "%s\n"},
                                     Login(&pki, "SCRAM-SHA-256", "alice", "alice-secret")));
  REQUIRE_RUN(read, 0);
  CHECK(read.out == a + b + c);

  // Refused: a wrong password (each mechanism), an unknown user, no login at all. A producer
  // with a wrong password stores nothing (the read below still finds exactly a, b and c).
  for (const std::string m : {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"}) {
    INFO(m);
    const RunResult wrong = f.Kcat(With({"-L", "-m", "5"}, Login(&pki, m, "alice", "not-it")), "", 30);
    CHECK(wrong.code != 0);
    CHECK(Contains(wrong.err, "uthentication failed"));
  }
  (void)f.Kcat(With({"-P", "-t", "secure", "-X", "message.timeout.ms=3000"},
                    Login(&pki, "SCRAM-SHA-256", "alice", "not-it")),
               "must-not-be-stored\n", 30);
  const RunResult unknown =
      f.Kcat(With({"-L", "-m", "5"}, Login(&pki, "SCRAM-SHA-256", "mallory", "alice-secret")), "", 30);
  CHECK(unknown.code != 0);
  CHECK(Contains(unknown.err, "uthentication failed"));
  const RunResult tls_only = f.Kcat(
      {"-L", "-m", "5", "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + pki("ca.pem")}, "", 30);
  CHECK(tls_only.code != 0);
  CHECK_FALSE(Contains(tls_only.out, "topic \"secure\""));
  const RunResult again =
      f.Kcat(With({"-C", "-t", "secure", "-e", "-f", "%s\n"}, Login(&pki, "PLAIN", "alice", "alice-secret")));
  REQUIRE_RUN(again, 0);
  CHECK(again.out == a + b + c);

  // A deleted user can no longer log in.
  REQUIRE_RUN(f.Rdmq({"user", "delete", "alice"}), 0);
  const RunResult gone =
      f.Kcat(With({"-L", "-m", "5"}, Login(&pki, "SCRAM-SHA-256", "alice", "alice-secret")), "", 30);
  CHECK(gone.code != 0);
}

TEST_CASE("librdkafka's C++ API with SASL_SSL: an idempotent producer and a group member log in with SCRAM",
          "[e2e][kafka][sasl]") {
  Pki pki;
  Fixture f({"--set", "kafka.security.protocol=SASL_SSL", "--set",
             "ssl.certificate.location=" + pki("server.pem"), "--set",
             "ssl.key.location=" + pki("server.key")});
  REQUIRE_RUN(f.Rdmq({"user", "add", "svc", "--password-file", "-"}, "svc-secret\n"), 0);
  REQUIRE_RUN(f.Rdmq({"topic", "create", "secured", "--partitions", "2"}), 0);
  const std::map<std::string, std::string> env = {
      {"RDKAFKA_PEER_CONFIG",
       "security.protocol=sasl_ssl;sasl.mechanisms=SCRAM-SHA-512;sasl.username=svc;"
       "sasl.password=svc-secret;ssl.ca.location=" +
           pki("ca.pem")}};
  const RunResult produced =
      Run({Bin("rdkafka_peer"), "produce", f.kafka(), "secured", "500", "5"}, "", 120, env);
  REQUIRE_RUN(produced, 0);
  CHECK(Contains(produced.out, "delivered 500 failed 0"));
  const RunResult consumed =
      Run({Bin("rdkafka_peer"), "consume", f.kafka(), "secured", "g", "10"}, "", 120, env);
  INFO(consumed.err);
  CHECK(std::count(consumed.out.begin(), consumed.out.end(), '\n') == 500);
  // The same programs with a wrong password deliver nothing.
  auto bad = env;
  bad["RDKAFKA_PEER_CONFIG"] += ";sasl.password=wrong;message.timeout.ms=5000";
  const RunResult refused =
      Run({Bin("rdkafka_peer"), "produce", f.kafka(), "secured", "10", "1"}, "", 60, bad);
  CHECK(refused.code != 0);
  CHECK(Contains(refused.out, "delivered 0"));
}

TEST_CASE("SASL_PLAINTEXT on 0.0.0.0: SCRAM logins only, a mechanism the broker does not enable is refused",
          "[e2e][kafka][kcat][sasl]") {
  Fixture f(
      {"--set", "kafka.security.protocol=SASL_PLAINTEXT", "--set", "sasl.enabled.mechanisms=SCRAM-SHA-512"});
  REQUIRE_RUN(f.Rdmq({"user", "add", "bob", "--password-file", "-"}, "bob-secret\n"), 0);
  const std::string lines = Lines("scram-", 50);
  REQUIRE_RUN(
      f.Kcat(With({"-P", "-t", "clear"}, Login(nullptr, "SCRAM-SHA-512", "bob", "bob-secret")), lines), 0);
  const RunResult read = f.Kcat(
      With({"-C", "-t", "clear", "-e", "-f", "%s\n"}, Login(nullptr, "SCRAM-SHA-512", "bob", "bob-secret")));
  REQUIRE_RUN(read, 0);
  CHECK(read.out == lines);
  const RunResult sha256 =
      f.Kcat(With({"-L", "-m", "5"}, Login(nullptr, "SCRAM-SHA-256", "bob", "bob-secret")), "", 30);
  CHECK(sha256.code != 0);
  const RunResult plain = f.Kcat({"-L", "-m", "5"}, "", 30);
  CHECK(plain.code != 0);
  CHECK_FALSE(Contains(plain.out, "topic \"clear\""));
}

TEST_CASE("SASL settings that cannot work stop the broker at start, naming the key", "[e2e][kafka][sasl]") {
  TempDir dir;
  struct Case {
    std::vector<std::string> sets;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"kafka.security.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms=PLAIN"},
       "needs kafka.security.protocol=SASL_SSL"},
      {{"kafka.security.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms=GSSAPI"},
       "'GSSAPI' is not one of"},
      {{"kafka.security.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms= "}, "names no mechanism"},
      {{"kafka.security.protocol=SASL_SSL"}, "needs ssl.certificate.location and ssl.key.location"},
  };
  for (const auto& k : cases) CheckRefusedAtStart(dir.str() + "/data", k.sets, k.says);
}

}  // namespace rdmq::test
