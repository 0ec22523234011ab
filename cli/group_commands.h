// `rdmq group list|describe|delete|reset-offsets`: consumer-group administration through
// client::AdminClient (docs/cli.md, "rdmq group"). group_commands.cc declares the commands and
// runs list, describe and delete; reset_offsets.cc plans and commits offset resets.
//
// Threading: called once from main's thread.
#pragma once

#include "admin_common.h"

namespace rdmq::cli::admin {

// The "group" command with its subcommands, for admin_main.cc's command tree.
CommandGroup GroupCommands();

// `rdmq group reset-offsets` (reset_offsets.cc).
int GroupResetOffsets(const Subcommand& sc, const ParsedArgs& a);
CommandSpec GroupResetOffsetsSpec();

}  // namespace rdmq::cli::admin
