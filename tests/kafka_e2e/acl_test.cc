// ACLs on the Kafka listener (authorizer.enabled), judged by kcat (librdkafka) logging in with
// SASL/SCRAM: a user may produce only with Write on the topic, consume only with Read on it (and
// on its group), sees in Metadata only the topics it may describe; a binding removed with `rdmq
// acl remove` takes effect at the next request; super users may do everything.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/cli_fixture.h"
#include "kafka_e2e/pki.h"

namespace rdmq::test {
namespace {

std::vector<std::string> As(const std::string& user) {
  return {"-X", "security.protocol=sasl_plaintext",
          "-X", "sasl.mechanisms=SCRAM-SHA-256",
          "-X", "sasl.username=" + user,
          "-X", "sasl.password=" + user + "-secret"};
}

std::string Lines(const std::string& prefix, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += prefix + std::to_string(i) + "\n";
  return s;
}

bool Refused(const RunResult& r) {
  return Contains(r.out + r.err, "uthorization failed") || Contains(r.out + r.err, "AUTHORIZATION_FAILED");
}

}  // namespace

TEST_CASE("kcat with ACLs: Write to produce, Read to consume (and Read on the group), until revoked",
          "[e2e][kafka][kcat][acl]") {
  // The local operator (the rdmq CLI on the shm control socket, ANONYMOUS) is a super user.
  Fixture f({"--set", "kafka.security.protocol=SASL_PLAINTEXT", "--set",
             "sasl.enabled.mechanisms=SCRAM-SHA-256", "--set", "authorizer.enabled=true", "--set",
             "super.users=User:ANONYMOUS"});
  for (const std::string u : {"alice", "bob"}) {
    REQUIRE_RUN(f.Rdmq({"user", "add", u, "--password-file", "-"}, u + "-secret\n"), 0);
  }
  REQUIRE_RUN(f.Rdmq({"topic", "create", "orders", "--partitions", "1"}), 0);
  REQUIRE_RUN(f.Rdmq({"topic", "create", "hidden", "--partitions", "1"}), 0);
  REQUIRE_RUN(
      f.Rdmq({"acl", "add", "--principal", "User:alice", "--operation", "write", "--topic", "orders"}), 0);
  REQUIRE_RUN(f.Rdmq({"acl", "add", "--principal", "User:bob", "--operation", "read", "--topic", "orders"}),
              0);
  REQUIRE_RUN(f.Rdmq({"acl", "add", "--principal", "User:bob", "--operation", "read", "--group", "billing"}),
              0);

  // alice writes orders; bob reads it back, alone and as a member of billing.
  const std::string lines = Lines("order-", 100);
  REQUIRE_RUN(f.Kcat(With({"-P", "-t", "orders"}, As("alice")), lines), 0);
  const RunResult read = f.Kcat(With({"-C", "-t", "orders", "-e", "-f", "%s\n"}, As("bob")));
  REQUIRE_RUN(read, 0);
  CHECK(read.out == lines);
  const RunResult group = f.Kcat(
      With({"-G", "billing", "-X", "auto.offset.reset=earliest", "-e", "-f", "%s\n", "orders"}, As("bob")),
      "", 60);
  CHECK(group.out == lines);

  // Metadata shows each user only what it may describe.
  const RunResult listed = f.Kcat(With({"-L"}, As("alice")));
  REQUIRE_RUN(listed, 0);
  CHECK(Contains(listed.out, "topic \"orders\""));
  CHECK_FALSE(Contains(listed.out, "topic \"hidden\""));

  // Refused: bob writing, alice reading, alice in bob's group, anyone on hidden. Nothing is stored.
  const RunResult bob_writes =
      f.Kcat(With({"-P", "-t", "orders", "-X", "message.timeout.ms=5000"}, As("bob")), "nope\n", 60);
  INFO(bob_writes.out << bob_writes.err);
  CHECK(Refused(bob_writes));
  const RunResult alice_reads = f.Kcat(With({"-C", "-t", "orders", "-e", "-c", "1"}, As("alice")), "", 60);
  INFO(alice_reads.out << alice_reads.err);
  CHECK(Refused(alice_reads));
  CHECK_FALSE(Contains(alice_reads.out, "order-0"));
  const RunResult hidden =
      f.Kcat(With({"-P", "-t", "hidden", "-X", "message.timeout.ms=5000"}, As("alice")), "nope\n", 60);
  CHECK(Refused(hidden));
  const RunResult all = f.Kcat({"-C", "-t", "orders", "-e", "-f", "%s\n"}, "", 60);  // no login at all
  CHECK(all.code != 0);
  const auto described = ParseJson(f.Rdmq({"topic", "describe", "orders", "--json"}));
  CHECK(described["partitions"][0]["high_watermark"] == 100);
  const auto hidden_d = ParseJson(f.Rdmq({"topic", "describe", "hidden", "--json"}));
  CHECK(hidden_d["partitions"][0]["high_watermark"] == 0);

  // The CLI lists the bindings; removing alice's Write refuses her next produce.
  const RunResult acls = f.Rdmq({"acl", "list", "--topic", "orders"});
  REQUIRE_RUN(acls, 0);
  CHECK(Contains(acls.out, "User:alice"));
  CHECK(Contains(acls.out, "User:bob"));
  REQUIRE_RUN(
      f.Rdmq({"acl", "remove", "--principal", "User:alice", "--operation", "write", "--topic", "orders"}), 0);
  const RunResult revoked =
      f.Kcat(With({"-P", "-t", "orders", "-X", "message.timeout.ms=5000"}, As("alice")), "late\n", 60);
  CHECK(Refused(revoked));
  const auto after = ParseJson(f.Rdmq({"topic", "describe", "orders", "--json"}));
  CHECK(after["partitions"][0]["high_watermark"] == 100);
}

}  // namespace rdmq::test
