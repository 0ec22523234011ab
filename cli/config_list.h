// `rdmq config list`: every configuration key of one component (or all) from its key table,
// as text, JSON or the Markdown of docs/configuration.md.
#pragma once

#include <string_view>
#include <vector>

#include "rdmq/cli/args.h"
#include "rdmq/config/render.h"

namespace rdmq::cli {

// The tables of `which` (broker, topic, producer, consumer, client, bench; "" = all but client).
// kUsage naming `which` when it is none of them.
Result<std::vector<config::TableDoc>> ConfigTables(std::string_view which);
// The command: positional [COMPONENT], flags --json and --markdown. Returns the exit status.
int ConfigList(const ParsedArgs& args);
// The command's spec (path "rdmq config list").
CommandSpec ConfigListSpec();

}  // namespace rdmq::cli
