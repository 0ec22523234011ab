#include "user_commands.h"

#include <cctype>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "password.h"
#include "rdmq/auth/scram.h"
#include "rdmq/cli/output.h"
#include "rdmq/metadata/user.h"
#include "rdmq/protocol/messages.h"
#include "security_backend.h"

namespace rdmq::cli::admin {
namespace {

using nlohmann::ordered_json;

constexpr int64_t kDefaultIterations = 8192;

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// --mechanism: SCRAM-SHA-256, SCRAM-SHA-512 or all (any case).
Result<std::vector<auth::ScramHash>> MechanismsFrom(const ParsedArgs& a) {
  const std::string m = Upper(a.GetOr("mechanism", "all"));
  if (m == "ALL") return std::vector<auth::ScramHash>{auth::ScramHash::kSha256, auth::ScramHash::kSha512};
  if (const auto h = auth::ScramHashOf(m)) return std::vector{*h};
  return UsageError("--mechanism " + a.GetOr("mechanism", "") +
                    ": must be SCRAM-SHA-256, SCRAM-SHA-512 or all");
}

// The user's name checked, the password read, and one secret per mechanism derived from it (a
// fresh random salt each). Usage errors before anything is read where possible.
Result<client::UserCredentials> CredentialsFrom(const ParsedArgs& a) {
  client::UserCredentials u;
  u.name = a.positional()[0];
  if (Status s = metadata::ValidateUserName(u.name); !s.ok()) return UsageError(std::string(s.context()));
  RDMQ_ASSIGN_OR_RETURN(auto hashes, MechanismsFrom(a));
  RDMQ_ASSIGN_OR_RETURN(int64_t iterations, a.GetInt("iterations", kDefaultIterations,
                                                     auth::kMinScramIterations, auth::kMaxScramIterations));
  RDMQ_ASSIGN_OR_RETURN(std::string password, ReadPassword(a.GetOr("password-file", "-"), u.name));
  for (const auto h : hashes) {
    RDMQ_ASSIGN_OR_RETURN(auto c, auth::MakeScramCredential(h, password, static_cast<uint32_t>(iterations)));
    u.secrets.push_back({auth::MechanismName(h), std::move(c.salt), c.iterations, std::move(c.stored_key),
                         std::move(c.server_key)});
  }
  return u;
}

// A bad command line (exit 2) or a password that could not be read (exit 1).
int Refused(const std::string& what, const Status& s) {
  return s.is(CliErrc::kUsage) || s.is(config::ConfigErrc::kUsage) ? Usage(s) : Fail(what, s);
}

std::vector<std::string> MechanismNames(const client::UserCredentials& u) {
  std::vector<std::string> out;
  for (const auto& s : u.secrets) out.push_back(s.mechanism);
  return out;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out.empty() ? "-" : out;
}

// add and passwd: the same options, one call apart.
int PutUser(const ParsedArgs& a, bool create) {
  const std::string what = std::string(create ? "user add " : "user passwd ") + a.positional()[0];
  auto user = CredentialsFrom(a);
  if (!user.ok()) return Refused(what, user.status());
  int code = 0;
  auto users = OpenSecurityBackend(a, &code);
  if (!users) return code;
  const Status s = create ? users->Create(*user) : users->Alter(*user);
  if (!s.ok()) {
    const int failed = Fail(what, s);
    if (IsUserExists(s)) {
      std::cerr << "rdmq: to change its password: rdmq user passwd " << user->name << "\n";
    } else if (IsNoSuchUser(s)) {
      std::cerr << "rdmq: to create it: rdmq user add " << user->name << "\n";
    }
    return failed;
  }
  if (a.Has("json")) {
    std::cout << ordered_json{{"user", user->name}, {"mechanisms", MechanismNames(*user)}}.dump(2) << "\n";
  } else {
    std::cout << (create ? "created user " : "changed the password of user ") << user->name << " ("
              << Joined(MechanismNames(*user)) << ")\n";
  }
  return kExitOk;
}

int UserAdd(const Subcommand&, const ParsedArgs& a) { return PutUser(a, true); }
int UserPasswd(const Subcommand&, const ParsedArgs& a) { return PutUser(a, false); }

int UserList(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto backend = OpenSecurityBackend(a, &code);
  if (!backend) return code;
  auto users = backend->List();
  if (!users.ok()) return Fail("user list", users.status());
  if (a.Has("json")) {
    ordered_json list = ordered_json::array();
    for (const auto& u : *users) list.push_back({{"name", u.name}, {"mechanisms", u.mechanisms}});
    std::cout << ordered_json{{"users", std::move(list)}}.dump(2) << "\n";
    return kExitOk;
  }
  if (users->empty()) {
    std::cout << "no users\n";
    return kExitOk;
  }
  Table t({"USER", "MECHANISMS"});
  for (const auto& u : *users) t.AddRow({u.name, Joined(u.mechanisms)});
  t.Print(std::cout);
  return kExitOk;
}

int UserDelete(const Subcommand&, const ParsedArgs& a) {
  int code = 0;
  auto users = OpenSecurityBackend(a, &code);
  if (!users) return code;
  ordered_json deleted = ordered_json::array();
  for (const auto& name : a.positional()) {
    if (Status s = metadata::ValidateUserName(name); !s.ok())
      return Usage(UsageError(std::string(s.context())));
  }
  for (const auto& name : a.positional()) {
    Status s = users->Delete(name);
    if (!s.ok() && !(a.Has("if-exists") && IsNoSuchUser(s))) {
      return Fail("user delete " + name, s);
    }
    if (s.ok()) deleted.push_back(name);
    if (!a.Has("json")) std::cout << (s.ok() ? "deleted user " : "no user ") << name << "\n";
  }
  if (a.Has("json")) std::cout << ordered_json{{"deleted", deleted}}.dump(2) << "\n";
  return kExitOk;
}

constexpr const char* kUserDataDirHelp =
    "work on the users of the broker whose data directory is DIR, while no broker runs on it\n"
    "(refused while one does): how the first user of a broker whose control path asks for a\n"
    "login (rpc.sasl.enabled.mechanisms) is made";

std::vector<OptionSpec> SecretOptions() {
  return WithGlobals({
      {"data-dir", 0, "DIR", kUserDataDirHelp},
      {"password-file", 0, "FILE",
       "read the password from FILE's first line; '-' (the default) reads standard input\n"
       "(prompting twice, without echo, on a terminal)"},
      {"iterations", 0, "N", "PBKDF2 iterations, 4096 to 1000000 (default 8192)"},
      {"mechanism", 0, "M", "SCRAM-SHA-256, SCRAM-SHA-512 or all (default all: one secret each)"},
  });
}

constexpr const char* kSecretsText =
    "The password is read from standard input or --password-file (its first line; an empty\n"
    "password is refused). rdmq derives the SCRAM secrets itself (a random salt, PBKDF2 with\n"
    "--iterations, StoredKey and ServerKey; RFC 5802), so the password never reaches the broker:\n"
    "the broker stores the secrets in its metadata store. PLAIN logins are checked against them.\n"
    "A user name is 1 to 128 characters of letters, digits, '.', '_', '@' and '-'.";

}  // namespace

CommandGroup UserCommands() {
  return CommandGroup{
      "user",
      "Add, list and delete the SASL users of the Kafka listener; change their passwords.",
      {
          Subcommand{
              CommandSpec{
                  .path = "rdmq user add",
                  .usage = "NAME [--password-file FILE] [--iterations N] [--mechanism M] [options]",
                  .summary = "Create a user with SCRAM secrets derived from a password.",
                  .description = kSecretsText,
                  .options = SecretOptions(),
                  .examples = {"rdmq user add alice                      # asks for the password",
                               "rdmq user add admin --data-dir /var/lib/rdmq  # before the broker starts",
                               "rdmq user add alice --password-file alice.pw",
                               "printf '%s\\n' \"$PW\" | rdmq user add svc-billing "
                               "--mechanism SCRAM-SHA-512"},
                  .min_positional = 1,
                  .max_positional = 1},
              UserAdd},
          Subcommand{
              CommandSpec{.path = "rdmq user passwd",
                          .usage = "NAME [--password-file FILE] [--iterations N] [--mechanism M] [options]",
                          .summary = "Change a user's password (its secrets are replaced).",
                          .description = std::string(kSecretsText) +
                                         "\nThe new secrets replace all the old ones: a mechanism left out "
                                         "by --mechanism is dropped.\nConnections already logged in are "
                                         "not affected.",
                          .options = SecretOptions(),
                          .examples = {"rdmq user passwd alice",
                                       "rdmq user passwd alice --password-file new.pw --iterations 16384"},
                          .min_positional = 1,
                          .max_positional = 1},
              UserPasswd},
          Subcommand{
              CommandSpec{.path = "rdmq user list",
                          .usage = "[options]",
                          .summary = "List the users and the mechanisms each can log in with.",
                          .description = "No secret is shown, nor ever sent by the broker.",
                          .options = WithGlobals({{"data-dir", 0, "DIR", kUserDataDirHelp}}),
                          .examples = {"rdmq user list", "rdmq user list --json | jq -r '.users[].name'",
                                       "rdmq user list --data-dir /var/lib/rdmq"}},
              UserList},
          Subcommand{
              CommandSpec{.path = "rdmq user delete",
                          .usage = "NAME... [options]",
                          .summary = "Delete users: they can no longer log in.",
                          .description = "New logins fail at once, and the user's connections are cut off "
                                         "(rdmq clients at once, Kafka clients at their next request).",
                          .options = WithGlobals({{"if-exists", 0, "", "succeed if a user does not exist"},
                                                  {"data-dir", 0, "DIR", kUserDataDirHelp}}),
                          .examples = {"rdmq user delete alice", "rdmq user delete a b c --if-exists"},
                          .min_positional = 1,
                          .max_positional = 1000},
              UserDelete},
      }};
}

}  // namespace rdmq::cli::admin
