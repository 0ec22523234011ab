#include "acl_commands.h"

#include <cctype>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rdmq/cli/output.h"
#include "security_backend.h"

namespace rdmq::cli::admin {
namespace {

using nlohmann::ordered_json;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The resource the command line names: --topic NAME, --group NAME or --cluster (exactly one when
// `required`; none is "any" for list).
struct Resource {
  std::string type;  // empty: none given
  std::string name;
};

Result<Resource> ResourceFrom(const ParsedArgs& a, bool required) {
  std::vector<Resource> given;
  if (a.Has("topic")) given.push_back({"topic", a.GetOr("topic", "")});
  if (a.Has("group")) given.push_back({"group", a.GetOr("group", "")});
  if (a.Has("cluster")) given.push_back({"cluster", "cluster"});
  if (given.size() > 1) return UsageError("give one of --topic, --group and --cluster");
  if (given.empty()) {
    if (required) return UsageError("name the resource: --topic NAME, --group NAME or --cluster");
    return Resource{};
  }
  if (given[0].name.empty()) return UsageError("--" + given[0].type + " needs a name ('*' for every one)");
  return given[0];
}

// Every binding add and remove name: each --principal with each --operation on the resource.
Result<std::vector<client::AclBinding>> BindingsFrom(const ParsedArgs& a) {
  RDMQ_ASSIGN_OR_RETURN(Resource res, ResourceFrom(a, true));
  const std::vector<std::string> principals = a.GetAll("principal");
  const std::vector<std::string> operations = a.GetAll("operation");
  if (principals.empty()) return UsageError("name who: --principal User:NAME (or User:*)");
  if (operations.empty()) {
    return UsageError("name what: --operation read|write|create|delete|alter|describe|all");
  }
  if (a.Has("prefixed") && res.type == "cluster") return UsageError("--prefixed does not apply to --cluster");
  std::vector<client::AclBinding> out;
  for (const auto& p : principals) {
    for (const auto& op : operations) {
      client::AclBinding b;
      b.principal = p;
      b.permission = a.Has("deny") ? "deny" : "allow";
      b.operation = Lower(op);
      b.resource_type = res.type;
      b.pattern_type = a.Has("prefixed") ? "prefixed" : "literal";
      b.resource_name = res.name;
      out.push_back(std::move(b));
    }
  }
  return out;
}

// "allow User:alice read topic:orders" ("topic:billing-*" for a prefix), as the broker logs it.
std::string Line(const client::AclBinding& b) {
  std::string res = b.resource_type == "cluster" ? "cluster" : b.resource_type + ":" + b.resource_name;
  if (b.pattern_type == "prefixed") res += "*";
  return b.permission + " " + b.principal + " " + b.operation + " " + res;
}

ordered_json Json(const client::AclBinding& b) {
  return {{"principal", b.principal},       {"permission", b.permission},
          {"operation", b.operation},       {"resource_type", b.resource_type},
          {"pattern_type", b.pattern_type}, {"resource_name", b.resource_name}};
}

// Whether `b` applies to the resource a list filter names: the same type, and a pattern that
// covers the name (the name itself, '*', or a prefix of it).
bool Covers(const client::AclBinding& b, const Resource& r) {
  if (r.type.empty()) return true;
  if (b.resource_type != r.type) return false;
  if (b.pattern_type == "prefixed") return r.name.starts_with(b.resource_name);
  return b.resource_name == "*" || b.resource_name == r.name;
}

int Change(const ParsedArgs& a, bool add) {
  const char* verb = add ? "acl add" : "acl remove";
  auto bindings = BindingsFrom(a);
  if (!bindings.ok()) return Usage(bindings.status());
  int code = 0;
  auto backend = OpenSecurityBackend(a, &code);
  if (!backend) return code;
  auto n = add ? backend->AddAcls(*bindings) : backend->RemoveAcls(*bindings);
  if (!n.ok()) return Fail(verb, n.status());
  if (a.Has("json")) {
    ordered_json list = ordered_json::array();
    for (const auto& b : *bindings) list.push_back(Json(b));
    std::cout << ordered_json{{add ? "added" : "removed", *n}, {"acls", std::move(list)}}.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& b : *bindings) std::cout << (add ? "acl " : "acl (removed) ") << Line(b) << "\n";
  std::cout << *n << " of " << bindings->size() << (add ? " new" : " removed")
            << (add ? " (the others were there already)\n" : " (the others were not there)\n");
  return kExitOk;
}

int AclAdd(const Subcommand&, const ParsedArgs& a) { return Change(a, true); }
int AclRemove(const Subcommand&, const ParsedArgs& a) { return Change(a, false); }

int AclList(const Subcommand&, const ParsedArgs& a) {
  auto res = ResourceFrom(a, false);
  if (!res.ok()) return Usage(res.status());
  const std::vector<std::string> principals = a.GetAll("principal");
  int code = 0;
  auto backend = OpenSecurityBackend(a, &code);
  if (!backend) return code;
  auto acls = backend->ListAcls();
  if (!acls.ok()) return Fail("acl list", acls.status());
  std::vector<client::AclBinding> shown;
  for (const auto& b : *acls) {
    const bool who = principals.empty() ||
                     std::find(principals.begin(), principals.end(), b.principal) != principals.end();
    if (who && Covers(b, *res)) shown.push_back(b);
  }
  if (a.Has("json")) {
    ordered_json list = ordered_json::array();
    for (const auto& b : shown) list.push_back(Json(b));
    std::cout << ordered_json{{"acls", std::move(list)}}.dump(2) << "\n";
    return kExitOk;
  }
  if (shown.empty()) {
    std::cout << "no ACLs\n";
    return kExitOk;
  }
  Table t({"PRINCIPAL", "PERMISSION", "OPERATION", "RESOURCE", "PATTERN", "NAME"});
  for (const auto& b : shown) {
    t.AddRow({b.principal, b.permission, b.operation, b.resource_type, b.pattern_type, b.resource_name});
  }
  t.Print(std::cout);
  return kExitOk;
}

constexpr const char* kAclDataDirHelp =
    "work on the ACLs of the broker whose data directory is DIR, while no broker runs on it\n"
    "(refused while one does): how the first ACLs of a broker with authorizer.enabled are made";

std::vector<OptionSpec> BindingOptions() {
  return WithGlobals({
      {"principal", 0, "P", "who: User:NAME, or User:* for every user (repeatable)", true},
      {"operation", 0, "OP",
       "what: read, write, create, delete, alter, describe or all (repeatable); an allow of\n"
       "read, write, delete or alter also allows describe",
       true},
      {"topic", 0, "NAME", "the resource: a topic ('*': every topic)"},
      {"group", 0, "NAME", "the resource: a consumer group ('*': every group)"},
      {"cluster", 0, "", "the resource: the cluster (users and ACLs; creating topics)"},
      {"prefixed", 0, "", "NAME is a prefix: the binding covers every name that starts with it"},
      {"deny", 0, "", "deny instead of allow (a matching deny wins over any allow)"},
      {"data-dir", 0, "DIR", kAclDataDirHelp},
  });
}

constexpr const char* kAclText =
    "With authorizer.enabled=true the broker lets a client do only what a binding allows its user\n"
    "(ANONYMOUS when it did not log in; the CN of a Kafka client's certificate); super.users may\n"
    "do everything. What each request needs (docs/security.md): producing Write on the topic,\n"
    "consuming Read (and Read on the group), describing Describe, topic creation Create on the\n"
    "topic or the cluster, deletion Delete, topic changes Alter; users and ACLs Alter on the\n"
    "cluster (Describe to list them). A removed binding takes effect at once: the leases and read\n"
    "grants it allowed end.";

}  // namespace

CommandGroup AclCommands() {
  return CommandGroup{
      "acl",
      "Add, remove and list the ACLs that authorizer.enabled enforces.",
      {
          Subcommand{
              CommandSpec{
                  .path = "rdmq acl add",
                  .usage = "--principal P --operation OP (--topic NAME | --group NAME | "
                           "--cluster) [--prefixed] [--deny] [options]",
                  .summary = "Allow (or deny) principals operations on a resource.",
                  .description = kAclText,
                  .options = BindingOptions(),
                  .examples =
                      {"rdmq acl add --principal User:alice --operation write --topic orders",
                       "rdmq acl add --principal User:bob --operation read --group billing",
                       "rdmq acl add --principal User:etl --operation all --topic etl- --prefixed",
                       "rdmq acl add --principal User:* --operation describe --topic '*'",
                       "rdmq acl add --principal User:admin --operation all --cluster --data-dir DIR"}},
              AclAdd},
          Subcommand{CommandSpec{.path = "rdmq acl remove",
                                 .usage = "--principal P --operation OP (--topic NAME | --group NAME | "
                                          "--cluster) [--prefixed] [--deny] [options]",
                                 .summary = "Remove exactly these bindings; what they allowed ends at once.",
                                 .description = kAclText,
                                 .options = BindingOptions(),
                                 .examples = {"rdmq acl remove --principal User:alice --operation write "
                                              "--topic orders"}},
                     AclRemove},
          Subcommand{
              CommandSpec{.path = "rdmq acl list",
                          .usage = "[--principal P] [--topic NAME | --group NAME | --cluster] [options]",
                          .summary = "List the bindings (of these principals, covering this resource).",
                          .description = "--topic NAME lists the bindings that apply to topic NAME: its own, "
                                         "'*' and the prefixes it starts with.",
                          .options = WithGlobals({
                              {"principal", 0, "P", "only these principals' bindings (repeatable)", true},
                              {"topic", 0, "NAME", "only the bindings that apply to this topic"},
                              {"group", 0, "NAME", "only the bindings that apply to this group"},
                              {"cluster", 0, "", "only the cluster's bindings"},
                              {"data-dir", 0, "DIR", kAclDataDirHelp},
                          }),
                          .examples = {"rdmq acl list", "rdmq acl list --topic orders",
                                       "rdmq acl list --principal User:alice --json"}},
              AclList},
      }};
}

}  // namespace rdmq::cli::admin
