// ClusterProducer: the Producer of a cluster (docs/replication.md, "Clients of a cluster"). A
// cluster's partitions are led by different brokers, and a broker takes records only for the
// partitions it leads (others answer NOT_LEADER). This producer keeps one Core per broker it
// writes to, each connected to that broker alone with its own fabric, arena and I/O thread (as
// librdkafka keeps a thread per broker), and routes each record to the Core of its partition's
// leader (Routes). Partitions are picked here, by key or sticky, since the leaders differ.
//
// Routes come from DescribeCluster and DescribeTopic, asked of any broker it is connected to:
// once per topic, and again when a broker answers NOT_LEADER (the record is then routed once
// more). A partition whose leader is down goes to the Core of its first replica, which
// reconnects with backoff as the single-broker producer does; records wait up to
// delivery.timeout.ms. buffer.memory applies to each broker's Core.
//
// Not yet: batches a Core holds when leadership moves away fail with NOT_LEADER rather than
// moving to the new leader's Core (leaders move only with replication, not built yet).
//
// Threading: as Producer (thread-safe).
#pragma once

#include <memory>

#include "producer/core.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::producer {

// `first` is connected to the bootstrap broker, which answered `cluster` (clustered).
Result<std::unique_ptr<Producer>> MakeClusterProducer(const ProducerConfig& config,
                                                      std::shared_ptr<Core> first,
                                                      const protocol::DescribeClusterResponse& cluster);

}  // namespace rdmq::producer
