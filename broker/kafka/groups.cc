// The classic group protocol, committed offsets, ListGroups, DescribeGroups, DeleteGroups.
// (Placeholder until the coordinator's classic API lands: every call answers
// COORDINATOR_NOT_AVAILABLE.)
#include "broker/kafka/front_door.h"
#include "rdmq/kafka/admin.h"
#include "rdmq/kafka/groups.h"
#include "rdmq/kafka/metadata_offsets.h"

namespace rdmq::broker::internal {

using kafka::ErrorCode;

void KafkaFrontDoor::JoinGroup(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::SyncGroup(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::Heartbeat(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::LeaveGroup(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::OffsetCommit(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::OffsetFetch(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::ListGroups(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::DescribeGroups(KafkaCall call, Reader&) { Close(call); }
void KafkaFrontDoor::DeleteGroups(KafkaCall call, Reader&) { Close(call); }

}  // namespace rdmq::broker::internal
