// The supported-API table and Kafka's per-version header rules (api.h).
#include "rdmq/kafka/api.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace rdmq::kafka {
namespace {

// Keep in api-key order and in step with docs/kafka-protocol.md, "Supported APIs".
constexpr VersionRange kSupported[] = {
    {ApiKey::kProduce, 3, 8},         {ApiKey::kFetch, 4, 11},           {ApiKey::kListOffsets, 1, 5},
    {ApiKey::kMetadata, 0, 8},        {ApiKey::kOffsetCommit, 2, 7},     {ApiKey::kOffsetFetch, 1, 5},
    {ApiKey::kFindCoordinator, 0, 2}, {ApiKey::kJoinGroup, 0, 5},        {ApiKey::kHeartbeat, 0, 3},
    {ApiKey::kLeaveGroup, 0, 3},      {ApiKey::kSyncGroup, 0, 3},        {ApiKey::kDescribeGroups, 0, 4},
    {ApiKey::kListGroups, 0, 2},      {ApiKey::kSaslHandshake, 0, 1},    {ApiKey::kApiVersions, 0, 3},
    {ApiKey::kCreateTopics, 0, 4},    {ApiKey::kDeleteTopics, 0, 3},     {ApiKey::kInitProducerId, 0, 1},
    {ApiKey::kDescribeConfigs, 0, 2}, {ApiKey::kSaslAuthenticate, 0, 1}, {ApiKey::kCreatePartitions, 0, 1},
    {ApiKey::kDeleteGroups, 0, 1},
};

constexpr bool SortedByKey() {
  for (size_t i = 1; i < std::size(kSupported); ++i) {
    if (static_cast<int16_t>(kSupported[i - 1].key) >= static_cast<int16_t>(kSupported[i].key)) return false;
  }
  return true;
}
static_assert(SortedByKey(), "kSupported must be in api-key order");

// The first flexible version of each api key 0..51 as Kafka defines it (-1: none known).
constexpr int16_t kFirstFlexible[] = {
    9,   // 0 Produce
    12,  // 1 Fetch
    6,   // 2 ListOffsets
    9,   // 3 Metadata
    4,   // 4 LeaderAndIsr
    2,   // 5 StopReplica
    6,   // 6 UpdateMetadata
    3,   // 7 ControlledShutdown
    8,   // 8 OffsetCommit
    6,   // 9 OffsetFetch
    3,   // 10 FindCoordinator
    6,   // 11 JoinGroup
    4,   // 12 Heartbeat
    4,   // 13 LeaveGroup
    4,   // 14 SyncGroup
    5,   // 15 DescribeGroups
    3,   // 16 ListGroups
    -1,  // 17 SaslHandshake
    3,   // 18 ApiVersions
    5,   // 19 CreateTopics
    4,   // 20 DeleteTopics
    2,   // 21 DeleteRecords
    2,   // 22 InitProducerId
    4,   // 23 OffsetForLeaderEpoch
    3,   // 24 AddPartitionsToTxn
    3,   // 25 AddOffsetsToTxn
    3,   // 26 EndTxn
    1,   // 27 WriteTxnMarkers
    3,   // 28 TxnOffsetCommit
    2,   // 29 DescribeAcls
    2,   // 30 CreateAcls
    2,   // 31 DeleteAcls
    4,   // 32 DescribeConfigs
    2,   // 33 AlterConfigs
    2,   // 34 AlterReplicaLogDirs
    2,   // 35 DescribeLogDirs
    2,   // 36 SaslAuthenticate
    2,   // 37 CreatePartitions
    2,   // 38 CreateDelegationToken
    2,   // 39 RenewDelegationToken
    2,   // 40 ExpireDelegationToken
    2,   // 41 DescribeDelegationToken
    2,   // 42 DeleteGroups
    2,   // 43 ElectLeaders
    1,   // 44 IncrementalAlterConfigs
    0,   // 45 AlterPartitionReassignments
    0,   // 46 ListPartitionReassignments
    -1,  // 47 OffsetDelete
    1,   // 48 DescribeClientQuotas
    1,   // 49 AlterClientQuotas
    0,   // 50 DescribeUserScramCredentials
    0,   // 51 AlterUserScramCredentials
};

constexpr std::string_view kNames[] = {
    "Produce",
    "Fetch",
    "ListOffsets",
    "Metadata",
    "LeaderAndIsr",
    "StopReplica",
    "UpdateMetadata",
    "ControlledShutdown",
    "OffsetCommit",
    "OffsetFetch",
    "FindCoordinator",
    "JoinGroup",
    "Heartbeat",
    "LeaveGroup",
    "SyncGroup",
    "DescribeGroups",
    "ListGroups",
    "SaslHandshake",
    "ApiVersions",
    "CreateTopics",
    "DeleteTopics",
    "DeleteRecords",
    "InitProducerId",
    "OffsetForLeaderEpoch",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "EndTxn",
    "WriteTxnMarkers",
    "TxnOffsetCommit",
    "DescribeAcls",
    "CreateAcls",
    "DeleteAcls",
    "DescribeConfigs",
    "AlterConfigs",
    "AlterReplicaLogDirs",
    "DescribeLogDirs",
    "SaslAuthenticate",
    "CreatePartitions",
    "CreateDelegationToken",
    "RenewDelegationToken",
    "ExpireDelegationToken",
    "DescribeDelegationToken",
    "DeleteGroups",
    "ElectLeaders",
    "IncrementalAlterConfigs",
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    "OffsetDelete",
    "DescribeClientQuotas",
    "AlterClientQuotas",
    "DescribeUserScramCredentials",
    "AlterUserScramCredentials",
};
static_assert(std::size(kNames) == std::size(kFirstFlexible));

}  // namespace

std::span<const VersionRange> SupportedApis() noexcept { return kSupported; }

const VersionRange* FindApi(ApiKey key) noexcept {
  for (const VersionRange& r : kSupported) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

bool Supported(ApiKey key, int16_t version) noexcept {
  const VersionRange* r = FindApi(key);
  return r != nullptr && version >= r->min && version <= r->max;
}

bool FlexibleRequest(ApiKey key, int16_t version) noexcept {
  const auto k = static_cast<int16_t>(key);
  if (k < 0 || static_cast<size_t>(k) >= std::size(kFirstFlexible)) return false;
  const int16_t first = kFirstFlexible[k];
  return first >= 0 && version >= first;
}

int RequestHeaderVersion(ApiKey key, int16_t version) noexcept {
  return FlexibleRequest(key, version) ? 2 : 1;
}

int ResponseHeaderVersion(ApiKey key, int16_t version) noexcept {
  if (key == ApiKey::kApiVersions) return 0;
  return FlexibleRequest(key, version) ? 1 : 0;
}

std::string_view ApiName(ApiKey key) noexcept {
  const auto k = static_cast<int16_t>(key);
  if (k < 0 || static_cast<size_t>(k) >= std::size(kNames)) return "Unknown";
  return kNames[k];
}

}  // namespace rdmq::kafka
