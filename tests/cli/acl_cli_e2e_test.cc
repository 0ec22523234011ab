// `rdmq acl add|list|remove` against a real broker, each in its own process: bindings added,
// listed (all, by principal, by the resource they apply to, as JSON), removed; adding twice and
// removing what is not there change nothing; bad input is refused with the reason and stores
// nothing; and the first ACLs of a broker that enforces them made with --data-dir before it
// starts, after which rdmq's tools may do exactly what they allow.
#include <nlohmann/json.hpp>

#include "cli/cli_fixture.h"

namespace rdmq::test {
namespace {

using nlohmann::json;

std::vector<std::string> Bind(std::vector<std::string> extra) {
  std::vector<std::string> a = {"acl", "add"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST_CASE("rdmq acl add, list and remove", "[e2e][cli][acl]") {
  Fixture f;
  RunResult r = f.Rdmq({"acl", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "no ACLs\n");

  r = f.Rdmq({"acl", "add", "--principal", "User:alice", "--principal", "User:bob", "--operation", "READ",
              "--operation", "describe", "--topic", "orders"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "acl allow User:alice read topic:orders"));
  CHECK(Contains(r.out, "acl allow User:bob describe topic:orders"));
  CHECK(Contains(r.out, "4 of 4 new"));
  REQUIRE_RUN(f.Rdmq({"acl", "add", "--principal", "User:etl", "--operation", "all", "--topic", "etl-",
                      "--prefixed", "--json"}),
              0);
  REQUIRE_RUN(f.Rdmq({"acl", "add", "--principal", "User:*", "--operation", "describe", "--group", "*"}), 0);
  REQUIRE_RUN(f.Rdmq({"acl", "add", "--principal", "User:mallory", "--operation", "write", "--topic",
                      "orders", "--deny"}),
              0);
  REQUIRE_RUN(f.Rdmq({"acl", "add", "--principal", "User:admin", "--operation", "alter", "--cluster"}), 0);
  r = f.Rdmq({"acl", "add", "--principal", "User:alice", "--operation", "read", "--topic", "orders"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "0 of 1 new"));

  r = f.Rdmq({"acl", "list", "--json"});
  REQUIRE_RUN(r, 0);
  const json all = ParseJson(r).at("acls");
  CHECK(all.size() == 8);
  CHECK(all.at(0).size() == 6);
  // The bindings that apply to topic etl-daily: the prefix; to orders: five (deny included).
  r = f.Rdmq({"acl", "list", "--topic", "etl-daily", "--json"});
  REQUIRE_RUN(r, 0);
  const json etl = ParseJson(r).at("acls");
  REQUIRE(etl.size() == 1);
  CHECK(etl.at(0) == json{{"principal", "User:etl"},
                          {"permission", "allow"},
                          {"operation", "all"},
                          {"resource_type", "topic"},
                          {"pattern_type", "prefixed"},
                          {"resource_name", "etl-"}});
  r = f.Rdmq({"acl", "list", "--topic", "orders", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r).at("acls").size() == 5);
  r = f.Rdmq({"acl", "list", "--principal", "User:bob"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "PRINCIPAL"));
  CHECK(Contains(r.out, "User:bob"));
  CHECK_FALSE(Contains(r.out, "User:alice"));

  // Remove: exactly what is named; what is not there is reported, not an error.
  r = f.Rdmq({"acl", "remove", "--principal", "User:bob", "--operation", "read", "--operation", "describe",
              "--topic", "orders"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "2 of 2 removed"));
  r = f.Rdmq({"acl", "remove", "--principal", "User:bob", "--operation", "read", "--topic", "orders"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "0 of 1 removed"));
  r = f.Rdmq({"acl", "list", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r).at("acls").size() == 6);

  // The bindings are durable: they survive a restart.
  REQUIRE(f.broker().Stop() == 0);
  std::string error;
  REQUIRE(f.broker().Start(&error));
  r = f.Rdmq({"acl", "list", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r).at("acls").size() == 6);
}

TEST_CASE("rdmq acl: bad input is refused with the reason and stores nothing", "[e2e][cli][acl]") {
  Fixture f;
  const auto refused = [&](std::vector<std::string> args, int code, const std::string& says) {
    auto r = f.Rdmq(std::move(args));
    INFO(r.out << r.err);
    CHECK(r.code == code);
    CHECK(Contains(r.err, says));
  };
  refused(Bind({"--operation", "read", "--topic", "t"}), 2, "--principal");
  refused(Bind({"--principal", "User:a", "--topic", "t"}), 2, "--operation");
  refused(Bind({"--principal", "User:a", "--operation", "read"}), 2, "name the resource");
  refused(Bind({"--principal", "User:a", "--operation", "read", "--topic", "t", "--group", "g"}), 2,
          "give one of --topic, --group and --cluster");
  refused(Bind({"--principal", "User:a", "--operation", "read", "--cluster", "--prefixed"}), 2,
          "--prefixed does not apply to --cluster");
  refused(Bind({"--principal", "alice", "--operation", "read", "--topic", "t"}), 1, "INVALID_ACL");
  refused(Bind({"--principal", "User:a", "--operation", "frobnicate", "--topic", "t"}), 1, "INVALID_ACL");
  refused(Bind({"--principal", "User:a", "--operation", "read", "--topic", "*", "--prefixed"}), 1,
          "INVALID_ACL");
  // One bad binding among good ones stores none of them.
  refused(Bind({"--principal", "User:a", "--principal", "bad", "--operation", "read", "--topic", "t"}), 1,
          "INVALID_ACL");
  auto r = f.Rdmq({"acl", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "no ACLs\n");
  r = f.Rdmq({"acl", "--help"});
  REQUIRE_RUN(r, 0);
  for (const char* sub : {"add", "remove", "list"}) CHECK(Contains(r.out, sub));
}

TEST_CASE("authorizer.enabled: the first ACLs made with --data-dir, then each tool may do what they allow",
          "[e2e][cli][acl][sasl]") {
  Fixture f({"--set", "rpc.sasl.enabled.mechanisms=SCRAM-SHA-256", "--set", "authorizer.enabled=true"});
  const std::string dir = f.broker().data_dir();
  REQUIRE(f.broker().Stop() == 0);
  for (const std::string u : {"admin", "app"}) {
    REQUIRE_RUN(f.Rdmq({"user", "add", u, "--password-file", "-", "--data-dir", dir}, u + "-pw\n"), 0);
  }
  // The operator may do everything: on the cluster and on every topic.
  REQUIRE_RUN(
      f.Rdmq(Bind({"--principal", "User:admin", "--operation", "all", "--cluster", "--data-dir", dir})), 0);
  REQUIRE_RUN(
      f.Rdmq(Bind({"--principal", "User:admin", "--operation", "all", "--topic", "*", "--data-dir", dir})),
      0);
  std::string error;
  REQUIRE(f.broker().Start(&error));
  const std::vector<std::string> admin = {"-X", "sasl.username=admin", "-X", "sasl.password=admin-pw"};
  const auto as_admin = [&](std::vector<std::string> a) {
    a.insert(a.end(), admin.begin(), admin.end());
    return f.Rdmq(std::move(a));
  };
  REQUIRE_RUN(as_admin({"topic", "create", "events", "--partitions", "1"}), 0);
  REQUIRE_RUN(
      f.Sh("printf 'a\\nb\\n' | RDMQ_SASL_USERNAME=admin RDMQ_SASL_PASSWORD=admin-pw rdmq-produce events"),
      0);
  const std::string app = "RDMQ_SASL_USERNAME=app RDMQ_SASL_PASSWORD=app-pw ";
  // app has no binding: it sees nothing and reads nothing.
  RunResult r = f.Sh(app + "rdmq topic list");
  REQUIRE_RUN(r, 0);
  CHECK_FALSE(Contains(r.out, "events"));
  r = f.Sh(app + "rdmq-consume -e events");
  CHECK(r.code != 0);
  CHECK(Contains(r.err, "TOPIC_AUTHORIZATION_FAILED"));
  r = f.Sh(app + "rdmq acl list");
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "CLUSTER_AUTHORIZATION_FAILED"));
  // Granted Read, it reads.
  REQUIRE_RUN(as_admin(Bind({"--principal", "User:app", "--operation", "read", "--topic", "events"})), 0);
  r = f.Sh(app + "rdmq-consume -e events");
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "a\nb\n");
}

}  // namespace
}  // namespace rdmq::test
