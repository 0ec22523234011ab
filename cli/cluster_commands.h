// `rdmq cluster status`: whether the broker answers; in a cluster the live brokers and the
// controller; the topics' partitions with their leaders, in-sync replicas and (for the replicas
// the answering broker holds) high watermarks; partitions under-replicated or without a leader.
//
// Threading: called once from main's thread.
#pragma once

#include "admin_common.h"

namespace rdmq::cli::admin {

// The "cluster" command with its subcommands, for admin_main.cc's command tree.
CommandGroup ClusterCommands();

}  // namespace rdmq::cli::admin
