// ClusterProducer: the Producer of a cluster (docs/replication.md, "Clients of a cluster"). A
// cluster's partitions are led by different brokers, and a broker takes records only for the
// partitions it leads (others answer NOT_LEADER). This producer keeps one Core per broker it
// writes to, each connected to that broker alone with its own fabric, arena and I/O thread (as
// librdkafka keeps a thread per broker), and routes each record to the Core of its partition's
// leader (Routes). Partitions are picked here, by key or sticky, since the leaders differ.
//
// Routes come from DescribeCluster and DescribeTopic, asked of any broker it is connected to
// (else of any live broker it knows): once per topic, again (Follow) when a Send is answered
// NOT_LEADER or cannot reach the partition's broker (the Send then blocks, asking every
// retry.backoff.ms, up to max.block.ms), and every 250 ms for a topic with batches that wait at
// a broker that is gone or refuses them. A partition without a leader stays where it was routed;
// that Core reconnects with backoff as the single-broker producer does, and its records wait up
// to delivery.timeout.ms. buffer.memory applies to each broker's Core.
//
// Following a leader. Every Core writes as the same producer id and epoch (the first broker's
// InitProducerId), and a partition's sequences live in exactly one Core at a time: the one its
// route names. When Follow finds that a partition's leader moved, the old Core hands the new one
// the partition (Core::Release, Adopt: its open batch sealed, every batch not acknowledged, in
// order, with its sequences and futures), before the route changes. The new leader holds the
// producer's state as far as the log was replicated to it, so it completes the batches it has and
// takes the others once each: nothing acknowledged is lost (acks=all), nothing is stored twice
// (idempotence), and a partition's records keep their order. A Send that reaches the old Core
// meanwhile is answered NOT_LEADER there and routed again once the move is done.
//
// Threading: as Producer (thread-safe). Follow runs one at a time (follow_mu_), from a Send
// answered NOT_LEADER or from the watcher thread.
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
