// `rdmq user add|list|passwd|delete` against a real broker, each in its own process: the password
// read from stdin or a file, secrets derived by the CLI (checked against the password in the
// broker's metadata store), listings without secrets, clear refusals with their exit codes, and
// users surviving broker restarts.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/cli_fixture.h"
#include "rdmq/auth/scram.h"
#include "rdmq/metadata/store.h"

namespace rdmq::test {
namespace {

using nlohmann::json;

constexpr char kPassword[] = "correct-horse-battery-staple";

// name -> mechanisms, from `rdmq user list --json`; checks that nothing but those two fields is
// listed.
std::map<std::string, std::vector<std::string>> Users(Fixture& f) {
  auto r = f.Rdmq({"user", "list", "--json"});
  REQUIRE_RUN(r, 0);
  const json j = ParseJson(r);
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& u : j.at("users")) {
    CHECK(u.size() == 2);  // name and mechanisms: no secret, no salt, no iteration count
    out[u.at("name").get<std::string>()] = u.at("mechanisms").get<std::vector<std::string>>();
  }
  return out;
}

// The user as the stopped broker's metadata store holds it.
std::optional<metadata::UserInfo> Stored(Fixture& f, const std::string& name) {
  auto store = metadata::MetadataStore::Open({f.broker().data_dir() + "/meta", 64, true});
  REQUIRE_OK(store);
  return (*store)->GetUser(name);
}

auth::ScramCredential Credential(const metadata::ScramSecret& s) {
  return {s.salt, s.iterations, s.stored_key, s.server_key};
}

TEST_CASE("rdmq user add, list, passwd and delete, and users survive a broker restart", "[e2e][cli][user]") {
  Fixture f;
  const std::vector<std::string> both = {"SCRAM-SHA-256", "SCRAM-SHA-512"};

  // add: the password on stdin (first line), both mechanisms by default.
  auto r = f.Rdmq({"user", "add", "alice"}, std::string(kPassword) + "\nignored second line\n");
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "created user alice (SCRAM-SHA-256, SCRAM-SHA-512)\n");
  std::ofstream(f.tmp().str() + "/bob.pw") << "bob-secret\r\n";
  r = f.Rdmq({"user", "add", "bob", "--password-file", f.tmp().str() + "/bob.pw", "--mechanism",
              "SCRAM-SHA-512", "--iterations", "4096", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r) == json{{"user", "bob"}, {"mechanisms", {"SCRAM-SHA-512"}}});

  // list: names and mechanisms, never a secret.
  CHECK(Users(f) ==
        std::map<std::string, std::vector<std::string>>{{"alice", both}, {"bob", {"SCRAM-SHA-512"}}});
  r = f.Rdmq({"user", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out ==
        "USER   MECHANISMS\n"
        "alice  SCRAM-SHA-256, SCRAM-SHA-512\n"
        "bob    SCRAM-SHA-512\n");

  // add again: refused, saying so, with the way to change the password.
  r = f.Rdmq({"user", "add", "alice"}, "other\n");
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "rdmq: user add alice: USER_EXISTS: user 'alice' already exists"));
  CHECK(Contains(r.err, "rdmq user passwd alice"));

  // passwd of a missing user, and delete of one.
  r = f.Rdmq({"user", "passwd", "carol"}, "pw\n");
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "UNKNOWN_USER: no user 'carol'"));

  // The broker keeps secrets that check against the password, and never the password itself.
  // (Killed: no checkpoint at exit, so the store and the restarted broker replay the log.)
  f.broker().Kill();
  CHECK_FALSE(std::filesystem::exists(f.broker().data_dir() + "/meta/metadata.json"));
  {
    const auto alice = Stored(f, "alice");
    REQUIRE(alice.has_value());
    REQUIRE(alice->scram.size() == 2);
    const auto sha256 = Credential(alice->scram.at("SCRAM-SHA-256"));
    const auto sha512 = Credential(alice->scram.at("SCRAM-SHA-512"));
    CHECK(sha256.iterations == 8192);
    CHECK(sha256.salt.size() == 16);
    CHECK(sha256.salt != sha512.salt);  // a fresh salt per secret
    CHECK(auth::CheckPassword(auth::ScramHash::kSha256, sha256, kPassword));
    CHECK(auth::CheckPassword(auth::ScramHash::kSha512, sha512, kPassword));
    CHECK_FALSE(auth::CheckPassword(auth::ScramHash::kSha256, sha256, "ignored second line"));
    const auto bob = Stored(f, "bob");
    REQUIRE(bob.has_value());
    REQUIRE(bob->scram.count("SCRAM-SHA-512") == 1);
    CHECK(bob->scram.at("SCRAM-SHA-512").iterations == 4096);
    CHECK(auth::CheckPassword(auth::ScramHash::kSha512, Credential(bob->scram.at("SCRAM-SHA-512")),
                              "bob-secret"));
  }
  const std::string meta = Slurp(f.broker().data_dir() + "/meta/metadata.wal");
  CHECK(Contains(meta, "\"put_user\""));
  CHECK_FALSE(Contains(meta, kPassword));
  CHECK_FALSE(Contains(meta, "bob-secret"));
  CHECK(Contains(f.broker().Log(), "user created user=alice"));
  CHECK_FALSE(Contains(f.broker().Log(), kPassword));

  // Restarted: the users are still there.
  std::string error;
  REQUIRE(f.broker().Start(&error));
  CHECK(Users(f) ==
        std::map<std::string, std::vector<std::string>>{{"alice", both}, {"bob", {"SCRAM-SHA-512"}}});

  // passwd: new secrets replace the old ones (here with only one mechanism).
  std::ofstream(f.tmp().str() + "/alice.pw") << "new-password\n";
  r = f.Rdmq({"user", "passwd", "alice", "--password-file", f.tmp().str() + "/alice.pw", "--mechanism",
              "scram-sha-256", "--iterations", "10000"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "changed the password of user alice (SCRAM-SHA-256)\n");
  CHECK(Users(f).at("alice") == std::vector<std::string>{"SCRAM-SHA-256"});

  // delete, then delete again.
  r = f.Rdmq({"user", "delete", "bob"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "deleted user bob\n");
  r = f.Rdmq({"user", "delete", "bob"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "rdmq: user delete bob: UNKNOWN_USER: no user 'bob'"));
  r = f.Rdmq({"user", "delete", "bob", "--if-exists", "--json"});
  REQUIRE_RUN(r, 0);
  CHECK(ParseJson(r) == json{{"deleted", json::array()}});

  // And after a clean stop, which writes a checkpoint: the restart loads the users from it.
  REQUIRE(f.broker().Stop() == 0);
  const std::string checkpoint = Slurp(f.broker().data_dir() + "/meta/metadata.json");
  CHECK(Contains(checkpoint, "\"users\""));
  CHECK_FALSE(Contains(checkpoint, "new-password"));
  {
    const auto alice = Stored(f, "alice");
    REQUIRE(alice.has_value());
    REQUIRE(alice->scram.size() == 1);
    const auto sha256 = Credential(alice->scram.at("SCRAM-SHA-256"));
    CHECK(sha256.iterations == 10000);
    CHECK(auth::CheckPassword(auth::ScramHash::kSha256, sha256, "new-password"));
    CHECK_FALSE(auth::CheckPassword(auth::ScramHash::kSha256, sha256, kPassword));
    CHECK_FALSE(Stored(f, "bob").has_value());
  }
  REQUIRE(f.broker().Start(&error));
  CHECK(Users(f) == std::map<std::string, std::vector<std::string>>{{"alice", {"SCRAM-SHA-256"}}});
  r = f.Rdmq({"user", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "USER   MECHANISMS\nalice  SCRAM-SHA-256\n");
}

TEST_CASE("rdmq user: bad input gives exit 2 with the reason, and changes nothing", "[e2e][cli][user]") {
  Fixture f;
  const auto usage = [&](std::vector<std::string> args, const std::string& input, const std::string& says) {
    auto r = f.Rdmq(std::move(args), input);
    REQUIRE_RUN(r, 2);
    CHECK(Contains(r.err, says));
  };
  usage({"user", "add", "bad name"}, "pw\n",
        "user name 'bad name': only letters, digits, '.', '_', '@' and '-'");
  usage({"user", "add", std::string(129, 'x')}, "pw\n", "must be 1 to 128 characters");
  usage({"user", "add", "alice"}, "", "the password is empty");
  usage({"user", "add", "alice"}, "\n", "the password is empty");
  usage({"user", "add", "alice", "--iterations", "1000"}, "pw\n", "--iterations");
  usage({"user", "add", "alice", "--iterations", "2000000"}, "pw\n", "--iterations");
  usage({"user", "add", "alice", "--mechanism", "SCRAM-SHA-1"}, "pw\n",
        "--mechanism SCRAM-SHA-1: must be SCRAM-SHA-256, SCRAM-SHA-512 or all");
  usage({"user", "passwd", "alice/x"}, "pw\n", "only letters");
  usage({"user", "delete", "a b"}, "", "only letters");
  usage({"user", "add"}, "pw\n", "");
  usage({"user", "add", "a", "b"}, "pw\n", "");
  usage({"user", "frobnicate"}, "", "unknown subcommand 'frobnicate' of 'user'");

  auto r = f.Rdmq({"user", "add", "alice", "--password-file", f.tmp().str() + "/missing.pw"});
  REQUIRE_RUN(r, 1);
  CHECK(Contains(r.err, "cannot read the password file " + f.tmp().str() + "/missing.pw"));

  r = f.Rdmq({"user", "list"});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "no users\n");

  r = f.Rdmq({"user", "--help"});
  REQUIRE_RUN(r, 0);
  for (const char* sub : {"add", "passwd", "list", "delete"}) CHECK(Contains(r.out, sub));
  r = f.Rdmq({"--help"});
  REQUIRE_RUN(r, 0);
  CHECK(Contains(r.out, "user add"));
}

}  // namespace
}  // namespace rdmq::test

namespace rdmq::test {

TEST_CASE("rpc.sasl.enabled.mechanisms: the first user made with --data-dir, then rdmq's tools log in",
          "[e2e][cli][user][sasl]") {
  Fixture f({"--set", "rpc.sasl.enabled.mechanisms=SCRAM-SHA-256"});
  const std::string dir = f.broker().data_dir();
  // No user yet, and the broker serves logged-in clients only: adding one through it fails,
  // and so does --data-dir while the broker holds the directory.
  RunResult r = f.Rdmq({"user", "add", "admin", "--password-file", "-"}, "admin-pw\n");
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "asks for a login"));
  r = f.Rdmq({"user", "add", "admin", "--password-file", "-", "--data-dir", dir}, "admin-pw\n");
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "a broker is running on " + dir));

  // Stopped: the first user goes straight into its metadata store.
  REQUIRE(f.broker().Stop() == 0);
  REQUIRE_RUN(f.Rdmq({"user", "add", "admin", "--password-file", "-", "--data-dir", dir, "--mechanism",
                      "SCRAM-SHA-256"},
                     "admin-pw\n"),
              0);
  r = f.Rdmq({"user", "list", "--data-dir", dir});
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "USER   MECHANISMS\nadmin  SCRAM-SHA-256\n");
  std::string error;
  REQUIRE(f.broker().Start(&error));

  r = f.Rdmq({"topic", "list"});
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "asks for a login (SCRAM-SHA-256); set sasl.username and sasl.password"));
  r = f.Rdmq({"topic", "list", "-X", "sasl.username=admin", "-X", "sasl.password=wrong"});
  CHECK(r.code == 1);
  CHECK(Contains(r.err, "AUTHENTICATION_FAILED"));
  REQUIRE_RUN(
      f.Rdmq({"topic", "create", "guarded", "-X", "sasl.username=admin", "-X", "sasl.password=admin-pw"}), 0);
  // The tools take the login from the environment too; a second user made through the broker.
  const std::string login = "RDMQ_SASL_USERNAME=admin RDMQ_SASL_PASSWORD=admin-pw ";
  REQUIRE_RUN(f.Sh("printf 'a\\nb\\nc\\n' | " + login + "rdmq-produce guarded"), 0);
  r = f.Sh(login + "rdmq-consume -e guarded");
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "a\nb\nc\n");
  REQUIRE_RUN(f.Sh("echo app-pw | " + login + "rdmq user add app --password-file -"), 0);
  r = f.Sh("RDMQ_SASL_USERNAME=app RDMQ_SASL_PASSWORD=app-pw rdmq-consume -e guarded");
  REQUIRE_RUN(r, 0);
  CHECK(r.out == "a\nb\nc\n");
  CHECK(f.Sh("rdmq-consume -e guarded").code != 0);
}

}  // namespace rdmq::test
