// What the `rdmq` admin CLI's commands share (admin_main.cc, group_commands.cc): the global
// options, the subcommand table's types, connecting to the broker, and the error printers with
// their exit codes.
//
// Threading: plain functions; no shared state.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rdmq/cli/args.h"
#include "rdmq/client/admin.h"
#include "rdmq/client/options.h"

namespace rdmq::cli::admin {

// --broker, --json, --timeout, -X: accepted by every subcommand.
const std::vector<OptionSpec>& GlobalOptions();
// `own` followed by the global options.
std::vector<OptionSpec> WithGlobals(std::vector<OptionSpec> own);

struct Subcommand;
using Handler = int (*)(const Subcommand&, const ParsedArgs&);
struct Subcommand {
  CommandSpec spec;
  Handler run;
};

// A command ("topic", "group", ...) and its subcommands.
struct CommandGroup {
  std::string name;
  std::string summary;
  std::vector<Subcommand> subcommands;
  CommandSpec Spec() const;
};

// "rdmq: <what>: <error>" on stderr; returns kExitError.
int Fail(const std::string& what, const Status& s);
// "rdmq: <error>" on stderr; returns kExitUsage.
int Usage(const Status& s);

Result<client::ClientOptions> ClientOptionsFrom(const ParsedArgs& a);
// Connects, or prints why not. `code` receives the exit status on failure.
std::unique_ptr<client::AdminClient> Connect(const ParsedArgs& a, int* code);

// A partition as `topic describe --json` and `cluster status --json` show it.
nlohmann::ordered_json PartitionJson(const client::PartitionDescription& p);
// Broker ids as "1,2,3" ("-" when none).
std::string Ids(const std::vector<int32_t>& ids);
// An offset or lag, "-" when unknown (negative).
std::string OrDash(int64_t v);
// A log number of the answering broker's replica of `p`, "-" when it holds none.
std::string LocalNum(const client::PartitionDescription& p, int64_t v);

}  // namespace rdmq::cli::admin
