// `rdmq user add|passwd|delete|list`: the broker's SASL users through client::AdminClient
// (docs/cli.md, "rdmq user"). add and passwd read the password (password.h) and derive the SCRAM
// secrets here with rdmq::auth, so the password never reaches the broker.
//
// Threading: called once from main's thread.
#pragma once

#include "admin_common.h"

namespace rdmq::cli::admin {

// The "user" command with its subcommands, for admin_main.cc's command tree.
CommandGroup UserCommands();

}  // namespace rdmq::cli::admin
