// Every Kafka request and response rdmq speaks, by family (docs/kafka-protocol.md):
//
//   produce_fetch.h      Produce, Fetch (and the conventions all message headers follow)
//   metadata_offsets.h   Metadata, ListOffsets, OffsetCommit, OffsetFetch
//   groups.h             FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup,
//                        DescribeGroups, ListGroups
//   admin.h              CreateTopics, DeleteTopics, InitProducerId, DescribeConfigs,
//                        CreatePartitions, DeleteGroups
//   api_versions.h       ApiVersions and the reply built from SupportedApis()
//   sasl.h               SaslHandshake, SaslAuthenticate
#pragma once

#include "rdmq/kafka/admin.h"
#include "rdmq/kafka/api_versions.h"
#include "rdmq/kafka/groups.h"
#include "rdmq/kafka/metadata_offsets.h"
#include "rdmq/kafka/produce_fetch.h"
#include "rdmq/kafka/sasl.h"
