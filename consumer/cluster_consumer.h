// ClusterConsumer: the reader of a Consumer in a cluster (docs/replication.md, "The broker in a
// cluster"): what an application gets without `group.id`, and what GroupConsumer reads through. A broker
// serves reads only of the partitions it leads (others answer NOT_LEADER), so this consumer keeps one
// single-broker consumer (consumer.cc) per broker it reads from, each connected to that broker alone, and
// gives each the assigned partitions that broker leads (client::Routes: the leader, else the first replica,
// whose consumer reconnects with backoff until it returns). Poll polls each of them without
// waiting; when none has records it waits in one of them, in turn, for at most 2 ms, so a
// record on another broker's partition waits that long at most per broker before it is seen.
// Leaders are asked for (DescribeTopic, DescribeCluster, through an admin connection to the
// bootstrap broker) at Assign, and again by Poll at most every second: a partition whose leader
// changed (the leader died or was deposed, a reassignment) moves to the new leader's consumer at
// the position reached; the admin connection moves to another broker when its own is gone.
//
// Threading: as Consumer (one application thread; Wakeup from any).
#pragma once

#include <memory>

#include "rdmq/consumer/consumer.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::consumer::internal {

// A consumer of one broker (its bootstrap), knowing nothing of clusters (consumer.cc).
Result<std::unique_ptr<Consumer>> MakeOneBrokerConsumer(const ConsumerConfig& config);

// `first` is the consumer of the bootstrap broker, which answered `cluster` (clustered).
Result<std::unique_ptr<Consumer>> MakeClusterConsumer(const ConsumerConfig& config,
                                                      std::unique_ptr<Consumer> first,
                                                      const protocol::DescribeClusterResponse& cluster);

}  // namespace rdmq::consumer::internal
