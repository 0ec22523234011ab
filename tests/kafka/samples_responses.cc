// Populated responses for the round-trip tests (samples.h).
#include "rdmq/kafka/api.h"
#include "tests/kafka/kafka_test_util.h"
#include "tests/kafka/samples.h"

namespace rdmq::kafka::test {
namespace {
using namespace std::literals;
const ByteSpan kBatchA = Span("batch-a: any bytes"sv);
const ByteSpan kBatchB = Span("batch-b"sv);
const ByteSpan kBlob = Span("\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"sv);
}  // namespace

void Fill(ProduceResponse* m) {
  ProducePartitionResponse p{0, ErrorCode::kNone, 100, 1700000000000, 7, {}, std::nullopt};
  ProducePartitionResponse q{
      1, ErrorCode::kInvalidRecord, -1, -1, 7, {{2, "bad key"}, {3, std::nullopt}}, "batch dropped"};
  m->topics = {{"orders", {p, q}}};
  m->throttle_time_ms = 12;
}

void Fill(FetchResponse* m) {
  m->throttle_time_ms = 3;
  m->error_code = ErrorCode::kFetchSessionIdNotFound;
  m->session_id = 9;
  FetchPartitionResponse p;
  p.index = 0;
  p.high_watermark = 120;
  p.last_stable_offset = 110;
  p.log_start_offset = 5;
  p.aborted_transactions = std::vector<FetchAbortedTransaction>{{77, 100}};
  p.preferred_read_replica = 2;
  p.records = {kBatchA, kBatchB};
  FetchPartitionResponse q;
  q.index = 1;
  q.error_code = ErrorCode::kOffsetOutOfRange;
  q.high_watermark = 3;
  m->topics = {{"orders", {p, q}}, {"audit", {}}};
}

void Fill(ListOffsetsResponse* m) {
  m->throttle_time_ms = 4;
  m->topics = {
      {"orders",
       {{0, ErrorCode::kNone, 1700000000000, 42, 3}, {1, ErrorCode::kNotLeaderOrFollower, -1, -1, -1}}}};
}

void Fill(MetadataResponse* m) {
  m->throttle_time_ms = 5;
  m->brokers = {{1, "broker-1.example", 9092, "rack-a"}, {2, "broker-2.example", 9093, std::nullopt}};
  m->cluster_id = "rdmq-cluster";
  m->controller_id = 1;
  MetadataTopic t{ErrorCode::kNone, "orders", true, {}, 0x0f};
  t.partitions = {{ErrorCode::kNone, 0, 1, 3, {1, 2}, {1}, {2}},
                  {ErrorCode::kLeaderNotAvailable, 1, -1, -1, {}, {}, {}}};
  m->topics = {t, {ErrorCode::kUnknownTopicOrPartition, "missing", false, {}, kAuthorizedOperationsUnknown}};
  m->cluster_authorized_operations = 0x1f;
}

void Fill(OffsetCommitResponse* m) {
  m->throttle_time_ms = 6;
  m->topics = {{"orders", {{0, ErrorCode::kNone}, {1, ErrorCode::kIllegalGeneration}}}};
}

void Fill(OffsetFetchResponse* m) {
  m->throttle_time_ms = 7;
  m->topics = {
      {"orders", {{0, 42, 3, "meta", ErrorCode::kNone}, {1, -1, -1, std::nullopt, ErrorCode::kNone}}}};
  m->error_code = ErrorCode::kCoordinatorLoadInProgress;
}

void Fill(FindCoordinatorResponse* m) {
  m->throttle_time_ms = 8;
  m->error_code = ErrorCode::kCoordinatorNotAvailable;
  m->error_message = "not yet";
  m->node_id = 1;
  m->host = "broker-1.example";
  m->port = 9092;
}

void Fill(JoinGroupResponse* m) {
  m->throttle_time_ms = 9;
  m->error_code = ErrorCode::kNone;
  m->generation_id = 5;
  m->protocol_name = "range";
  m->leader = "member-1";
  m->member_id = "member-2";
  m->members = {{"member-1", "instance-1", kBlob}, {"member-2", std::nullopt, kBlob}};
}

void Fill(HeartbeatResponse* m) {
  m->throttle_time_ms = 10;
  m->error_code = ErrorCode::kRebalanceInProgress;
}

void Fill(LeaveGroupResponse* m) {
  m->throttle_time_ms = 11;
  m->error_code = ErrorCode::kNone;
  m->members = {{"member-1", "instance-1", ErrorCode::kNone},
                {"member-2", std::nullopt, ErrorCode::kUnknownMemberId}};
}

void Fill(SyncGroupResponse* m) {
  m->throttle_time_ms = 12;
  m->error_code = ErrorCode::kNone;
  m->assignment = kBlob;
}

void Fill(DescribeGroupsResponse* m) {
  m->throttle_time_ms = 13;
  DescribedGroup g{ErrorCode::kNone, "billing", "Stable", "consumer", "range", {}, 0x0ff8};
  g.members = {{"member-1", "instance-1", "rdkafka", "/10.0.0.1", kBlob, kBlob},
               {"member-2", std::nullopt, "python", "/10.0.0.2", kBlob, {}}};
  m->groups = {g, {ErrorCode::kGroupIdNotFound, "gone", "Dead", "", "", {}, kAuthorizedOperationsUnknown}};
}

void Fill(ListGroupsResponse* m) {
  m->throttle_time_ms = 14;
  m->error_code = ErrorCode::kNone;
  m->groups = {{"billing", "consumer"}, {"audit", ""}};
}

void Fill(ApiVersionsResponse* m) {
  m->error_code = ErrorCode::kNone;
  m->api_keys = {{ApiKey::kProduce, 3, 8}, {ApiKey::kFetch, 4, 11}, {static_cast<ApiKey>(999), 0, 1}};
  m->throttle_time_ms = 15;
}

void Fill(CreateTopicsResponse* m) {
  m->throttle_time_ms = 16;
  m->topics = {{"orders", ErrorCode::kNone, std::nullopt},
               {"audit", ErrorCode::kTopicAlreadyExists, "exists"}};
}

void Fill(DeleteTopicsResponse* m) {
  m->throttle_time_ms = 17;
  m->responses = {{"orders", ErrorCode::kNone}, {"audit", ErrorCode::kUnknownTopicOrPartition}};
}

void Fill(InitProducerIdResponse* m) {
  m->throttle_time_ms = 18;
  m->error_code = ErrorCode::kNone;
  m->producer_id = 4000;
  m->producer_epoch = 2;
}

void Fill(DescribeConfigsResponse* m) {
  m->throttle_time_ms = 19;
  DescribeConfigsEntry e{"retention.ms", "3600000", false, true, 1, false, {{"retention.ms", "3600000", 1}}};
  DescribeConfigsEntry f{"sasl.password", std::nullopt, true, false, 5, true, {}};
  m->results = {{ErrorCode::kNone, std::nullopt, kResourceTopic, "orders", {e, f}},
                {ErrorCode::kUnknownTopicOrPartition, "no such topic", kResourceTopic, "gone", {}}};
}

void Fill(CreatePartitionsResponse* m) {
  m->throttle_time_ms = 20;
  m->results = {{"orders", ErrorCode::kNone, std::nullopt},
                {"audit", ErrorCode::kInvalidPartitions, "too few"}};
}

void Fill(DeleteGroupsResponse* m) {
  m->throttle_time_ms = 21;
  m->results = {{"billing", ErrorCode::kNone}, {"audit", ErrorCode::kNonEmptyGroup}};
}

void Fill(SaslHandshakeResponse* m) {
  m->error_code = ErrorCode::kUnsupportedSaslMechanism;
  m->mechanisms = {"SCRAM-SHA-256", "SCRAM-SHA-512"};
}

void Fill(SaslAuthenticateResponse* m) {
  m->error_code = ErrorCode::kSaslAuthenticationFailed;
  m->error_message = "authentication failed";
  m->auth_bytes = Span("v=rmF9pqV8S7suAoZWja4dJRkFsKQ="sv);
  m->session_lifetime_ms = 3600000;
}

}  // namespace rdmq::kafka::test
