// KafkaFrontDoor: the Kafka listener's request handler (docs/kafka-protocol.md). It decodes each
// frame with the sans-I/O codec (kafka/), serves it from the same broker state the one-sided path
// uses (topics and partitions, the local appender, the group coordinator and committed offsets,
// the producer-id allocator) and encodes the reply. Its pieces, one file each:
//
//   front_door.cc   dispatch by API key, replies, error mapping, malformed requests
//   metadata.cc     ApiVersions, Metadata (with topic auto-creation), FindCoordinator,
//                   InitProducerId
//   admin.cc        CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs
//   produce.cc      Produce: the batches through LocalAppender, acks 0/1/all
//   fetch.cc        Fetch (batches served from the mapped log as stored; max wait and min bytes
//                   honoured by waking on commit), ListOffsets
//   groups.cc       the classic group protocol, offsets, ListGroups, DescribeGroups, DeleteGroups
//   sasl.cc         SaslHandshake, SaslAuthenticate (with SASL_PLAINTEXT and SASL_SSL, nothing but
//                   ApiVersions and these is served before the client has logged in)
//
// Threading: Handle runs on the listener's threads; replies may complete later on other threads
// (a commit that assigns a pending append's offsets, a fetch waking on commit, the group
// coordinator's timer). Nothing here holds a lock across calls.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "admin_handlers.h"
#include "authorizer.h"
#include "broker/kafka/reply.h"
#include "cluster_member.h"
#include "counters.h"
#include "group_coordinator.h"
#include "lease_manager.h"
#include "local_append.h"
#include "publisher.h"
#include "rdmq/broker/config.h"
#include "rdmq/kafka/errors.h"
#include "rdmq/kafka/frame.h"
#include "rdmq/kafka/messages.h"
#include "rdmq/kafka/wire.h"
#include "rdmq/metadata/offsets.h"
#include "rdmq/metadata/store.h"
#include "topic_table.h"

namespace boost::asio {
class io_context;
}

namespace rdmq::broker::internal {

struct KafkaProduceState;  // produce.cc
struct KafkaPartWrite;
struct KafkaAppendQueue;

struct KafkaDeps {
  const BrokerConfig* cfg = nullptr;
  metadata::MetadataStore* meta = nullptr;
  TopicTable* topics = nullptr;
  AdminHandlers* admin = nullptr;
  GroupCoordinator* groups = nullptr;
  LocalAppender* appender = nullptr;
  Counters* counters = nullptr;
  const Authorizer* authz = nullptr;
  ClusterMember* cluster = nullptr;  // in a cluster only
  // Bumped by every user deletion: a logged-in connection then checks that its user still exists.
  const std::atomic<uint64_t>* users_deleted = nullptr;
};

// One request being served: its header, its frame (which decoded views point into) and where its
// reply goes.
struct KafkaCall {
  kafka::RequestHeader header;
  std::shared_ptr<const KafkaFrame> frame;
  KafkaRespond respond;
  std::string client_id() const { return std::string(header.client_id.value_or("")); }
};

class KafkaFrontDoor final : public KafkaRequestHandler {
 public:
  explicit KafkaFrontDoor(KafkaDeps deps) : d_(deps) {}

  // Once the listener is bound: where Metadata tells clients to connect, and the io_context for
  // fetch timers.
  void Attach(const std::string& advertised_host, int32_t advertised_port, boost::asio::io_context* io) {
    host_ = advertised_host;
    port_ = advertised_port;
    io_ = io;
  }

  void Handle(std::shared_ptr<const KafkaFrame> frame, KafkaRespond respond) override;
  // Runs of consecutive Produce requests are appended together (produce.cc); everything else
  // as Handle does.
  void HandleBatch(std::vector<KafkaRequest> requests) override;

  // Encodes `msg` as the reply to `call` (header by the API's rules, then the body); with
  // `close_after`, the connection closes once it is written.
  template <class Msg>
  static void Reply(const KafkaCall& call, const Msg& msg, std::shared_ptr<const void> keep = nullptr,
                    bool close_after = false);
  static void Close(const KafkaCall& call) { call.respond(KafkaReply{.close = true}); }

 private:
  using Reader = kafka::Reader;
  // metadata.cc
  void ApiVersions(const KafkaCall& call, Reader& r);
  void Metadata(const KafkaCall& call, Reader& r);
  void FindCoordinator(const KafkaCall& call, Reader& r);
  void InitProducerId(const KafkaCall& call, Reader& r);
  // admin.cc
  void CreateTopics(const KafkaCall& call, Reader& r);
  void DeleteTopics(const KafkaCall& call, Reader& r);
  void CreatePartitions(const KafkaCall& call, Reader& r);
  void DescribeConfigs(const KafkaCall& call, Reader& r);
  // produce.cc
  void Produce(KafkaCall call, Reader& r);
  // Consecutive Produce requests of one connection (each reader just past its header).
  void ProduceRun(std::vector<std::pair<KafkaCall, Reader>>& run);
  // One partition's writes, in request order. On a durable topic they join the partition's
  // append queue, which a listener thread drains (AppendQueued): requests that arrive while a
  // persist runs are appended together after it, from every connection. Otherwise AppendNow.
  void AppendWrites(const std::string& topic, int32_t index, std::vector<KafkaPartWrite>& writes);
  // Runs of the writes appended as one range where the checks allow, the others one by one.
  void AppendNow(Partition& p, std::vector<KafkaPartWrite>& writes);
  void AppendQueued(const std::shared_ptr<Partition>& p, const std::shared_ptr<KafkaAppendQueue>& q);
  // False when the group was refused before anything was written (append it one by one).
  bool AppendGroup(Partition& p, std::span<KafkaPartWrite> group, std::vector<LocalPrefault>* prefaults)
      REQUIRES(p.mu);
  void AppendOne(Partition& p, KafkaPartWrite& w, std::vector<LocalPrefault>* prefaults) REQUIRES(p.mu);
  // fetch.cc
  void Fetch(KafkaCall call, Reader& r);
  void ListOffsets(const KafkaCall& call, Reader& r);
  // groups.cc
  void JoinGroup(KafkaCall call, Reader& r);
  void SyncGroup(KafkaCall call, Reader& r);
  void Heartbeat(const KafkaCall& call, Reader& r);
  void LeaveGroup(const KafkaCall& call, Reader& r);
  void OffsetCommit(const KafkaCall& call, Reader& r);
  void OffsetFetch(const KafkaCall& call, Reader& r);
  void ListGroups(const KafkaCall& call, Reader& r);
  void DescribeGroups(const KafkaCall& call, Reader& r);
  void DeleteGroups(const KafkaCall& call, Reader& r);

  // sasl.cc
  void SaslHandshake(const KafkaCall& call, Reader& r);
  void SaslAuthenticate(const KafkaCall& call, Reader& r);
  // True unless the listener uses SASL and this frame's connection has not logged in.
  bool Authenticated(const KafkaFrame& frame) const;
  // One token of the login under way: the broker's answer (empty when it has none), or
  // kPermissionDenied with the reason the login failed.
  Result<std::string> SaslStep(KafkaSession& session, std::string_view token) const;
  void LogLogin(const KafkaSession& session, const std::string& peer, const std::string& client,
                const Status& failure) const;
  // A bare token frame after SaslHandshake v0.
  void RawSaslToken(const KafkaFrame& frame, const KafkaRespond& respond);

  // Authorization (authorizer.h): the user the call's connection acts as (KafkaSession::Principal;
  // ANONYMOUS without a session), and whether it may `op` the resource (always, with
  // authorizer.enabled off).
  static std::string_view User(const KafkaCall& call);
  bool May(const KafkaCall& call, metadata::AclOperation op, metadata::AclResourceType type,
           std::string_view name) const;
  bool MayTopic(const KafkaCall& call, metadata::AclOperation op, std::string_view topic) const {
    return May(call, op, metadata::AclResourceType::kTopic, topic);
  }
  bool MayGroup(const KafkaCall& call, metadata::AclOperation op, std::string_view group) const {
    return May(call, op, metadata::AclResourceType::kGroup, group);
  }
  // Before a group request: GROUP_AUTHORIZATION_FAILED without `op` on the group; in a cluster
  // NOT_COORDINATOR when another broker coordinates it (FindCoordinator says which); else NONE.
  kafka::ErrorCode GroupGate(const KafkaCall& call, metadata::AclOperation op, std::string_view group) const;

  // A request body that does not decode: logged, the connection closed (Kafka's behaviour).
  void Malformed(const KafkaCall& call, const Status& why) const;

  const KafkaDeps d_;
  std::string host_;
  int32_t port_ = 0;
  boost::asio::io_context* io_ = nullptr;
  std::atomic<uint64_t> fetch_waits_{0};
};

// Kafka's error code for an rdmq error (a WireError, a storage or metadata error).
kafka::ErrorCode ToKafkaError(const Status& s);

template <class Msg>
void KafkaFrontDoor::Reply(const KafkaCall& call, const Msg& msg, std::shared_ptr<const void> keep,
                           bool close_after) {
  auto w = std::make_shared<kafka::Writer>();
  w->ReserveSizePrefix();
  kafka::EncodeResponseHeader(*w, call.header.correlation_id, call.header.key(), call.header.api_version);
  kafka::Encode(*w, call.header.api_version, msg);
  if (!w->FinishSizePrefix().ok()) {
    Close(call);
    return;
  }
  KafkaReply reply{.close_after = close_after};
  for (const auto& c : w->chunks()) reply.chunks.push_back(c);
  if (keep) {
    reply.keep = std::make_shared<std::pair<std::shared_ptr<kafka::Writer>, std::shared_ptr<const void>>>(
        std::move(w), std::move(keep));
  } else {
    reply.keep = std::move(w);
  }
  call.respond(std::move(reply));
}

}  // namespace rdmq::broker::internal
