// Populated requests for the round-trip tests and the fuzz seeds (samples.h).
#include "tests/kafka/kafka_test_util.h"
#include "tests/kafka/samples.h"

namespace rdmq::kafka::test {
namespace {
using namespace std::literals;
// Not parsed by the codec: any bytes do.
const ByteSpan kRecords = Span("\x00\x00\x00\x00\x00\x00\x00\x05 fake record batch bytes"sv);
// A consumer protocol subscription v0: topics ["t"], user data null.
const ByteSpan kBlob = Span("\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"sv);
}  // namespace

void Fill(ProduceRequest* m) {
  m->transactional_id = "tx-1";
  m->acks = -1;
  m->timeout_ms = 30000;
  m->topics = {{"orders", {{0, kRecords}, {3, std::nullopt}}}, {"audit", {{1, kRecords}}}};
}

void Fill(FetchRequest* m) {
  m->replica_id = -1;
  m->max_wait_ms = 500;
  m->min_bytes = 1;
  m->max_bytes = 52428800;
  m->isolation_level = 1;
  m->session_id = 7;
  m->session_epoch = 2;
  m->topics = {{"orders", {{0, 4, 100, 5, 1048576}, {1, 4, 200, 6, 65536}}}};
  m->forgotten_topics = {{"audit", {2, 3}}};
  m->rack_id = "rack-a";
}

void Fill(ListOffsetsRequest* m) {
  m->replica_id = -1;
  m->isolation_level = 1;
  m->topics = {{"orders", {{0, 3, kListOffsetsLatest}, {1, 3, kListOffsetsEarliest}, {2, 3, 1700000000000}}}};
}

void Fill(MetadataRequest* m) {
  m->topics = std::vector<std::string_view>{"orders", "audit"};
  m->allow_auto_topic_creation = false;
  m->include_cluster_authorized_operations = true;
  m->include_topic_authorized_operations = true;
}

void Fill(OffsetCommitRequest* m) {
  m->group_id = "billing";
  m->generation_id = 4;
  m->member_id = "rdkafka-1234";
  m->group_instance_id = "instance-1";
  m->retention_time_ms = 86400000;
  m->topics = {{"orders", {{0, 42, 3, "meta"}, {1, 43, 3, std::nullopt}}}};
}

void Fill(OffsetFetchRequest* m) {
  m->group_id = "billing";
  m->topics = std::vector<OffsetFetchTopic>{{"orders", {0, 1, 2}}, {"audit", {}}};
}

void Fill(FindCoordinatorRequest* m) {
  m->key = "billing";
  m->key_type = 1;
}

void Fill(JoinGroupRequest* m) {
  m->group_id = "billing";
  m->session_timeout_ms = 10000;
  m->rebalance_timeout_ms = 300000;
  m->member_id = "member-1";
  m->group_instance_id = "instance-1";
  m->protocol_type = "consumer";
  m->protocols = {{"range", kBlob}, {"roundrobin", kBlob}};
}

void Fill(HeartbeatRequest* m) {
  m->group_id = "billing";
  m->generation_id = 5;
  m->member_id = "member-1";
  m->group_instance_id = "instance-1";
}

void Fill(LeaveGroupRequest* m) {
  m->group_id = "billing";
  m->member_id = "member-1";
  m->members = {{"member-1", "instance-1"}, {"member-2", std::nullopt}};
}

void Fill(SyncGroupRequest* m) {
  m->group_id = "billing";
  m->generation_id = 5;
  m->member_id = "member-1";
  m->group_instance_id = "instance-1";
  m->assignments = {{"member-1", kBlob}, {"member-2", kBlob}};
}

void Fill(DescribeGroupsRequest* m) {
  m->groups = {"billing", "audit"};
  m->include_authorized_operations = true;
}

void Fill(ListGroupsRequest*) {}

void Fill(ApiVersionsRequest* m) {
  m->client_software_name = "librdkafka";
  m->client_software_version = "2.0.2";
}

void Fill(CreateTopicsRequest* m) {
  m->topics = {{"orders", 3, 1, {}, {{"retention.ms", "3600000"}, {"cleanup.policy", std::nullopt}}},
               {"audit", -1, -1, {{0, {1}}, {1, {1, 2}}}, {}}};
  m->timeout_ms = 5000;
  m->validate_only = true;
}

void Fill(DeleteTopicsRequest* m) {
  m->topic_names = {"orders", "audit"};
  m->timeout_ms = 5000;
}

void Fill(InitProducerIdRequest* m) {
  m->transactional_id = "tx-1";
  m->transaction_timeout_ms = 60000;
}

void Fill(DescribeConfigsRequest* m) {
  m->resources = {{kResourceTopic, "orders", std::vector<std::string_view>{"retention.ms"}},
                  {kResourceBroker, "1", std::nullopt}};
  m->include_synonyms = true;
}

void Fill(CreatePartitionsRequest* m) {
  m->topics = {{"orders", 6, std::vector<CreatePartitionsAssignment>{{{1}}, {{1, 2}}}},
               {"audit", 2, std::nullopt}};
  m->timeout_ms = 5000;
  m->validate_only = true;
}

void Fill(DeleteGroupsRequest* m) { m->group_names = {"billing", "audit"}; }

void Fill(SaslHandshakeRequest* m) { m->mechanism = "SCRAM-SHA-256"; }

void Fill(SaslAuthenticateRequest* m) { m->auth_bytes = Span("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"sv); }

}  // namespace rdmq::kafka::test
