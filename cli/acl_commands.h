// `rdmq acl add|remove|list`: the broker's ACL bindings through client::AdminClient, or with
// --data-dir through a stopped broker's metadata store (docs/cli.md, "rdmq acl";
// docs/security.md, "Authorization").
//
// Threading: called once from main's thread.
#pragma once

#include "admin_common.h"

namespace rdmq::cli::admin {

// The "acl" command with its subcommands, for admin_main.cc's command tree.
CommandGroup AclCommands();

}  // namespace rdmq::cli::admin
