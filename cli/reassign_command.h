// `rdmq partition reassign TOPIC PARTITION --replicas IDS [--wait]`: moves a partition's replicas
// to other brokers of a cluster (docs/replication.md, "Reassignment") and, with --wait, follows
// the move until it completed.
//
// Threading: called once from main's thread.
#pragma once

#include "admin_common.h"

namespace rdmq::cli::admin {

// The subcommand, for admin_main.cc's "partition" group.
Subcommand PartitionReassignCommand();

}  // namespace rdmq::cli::admin
