// Produce: each partition's batches go through the LocalAppender (the broker as one more shared
// writer); the reply waits until every partition's offsets are assigned. acks=0 gets no reply
// at all (Kafka's rule), acks=1 and acks=all are the same on one broker: the reply is sent once
// the log committed the batches (durably, as the topic's durability says).
#include <atomic>
#include <mutex>

#include "broker/kafka/asio.h"
#include "broker/kafka/front_door.h"
#include "rdmq/common/log.h"
#include "rdmq/kafka/produce_fetch.h"

namespace rdmq::broker::internal {

namespace asio = boost::asio;
using kafka::ErrorCode;

namespace {

// One Produce request's partitions, completed as their appends complete (possibly later, on
// other threads); the last one to complete sends the reply.
struct ProduceState {
  KafkaCall call;
  kafka::ProduceResponse resp;
  std::atomic<int> outstanding{1};  // one for the request itself, released when all were tried
  void Done() {
    if (outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (!none) KafkaFrontDoor::Reply(call, resp);
  }
  bool none = false;  // acks=0: replied already (with nothing)
};

}  // namespace

void KafkaFrontDoor::Produce(KafkaCall call, Reader& r) {
  kafka::ProduceRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  auto st = std::make_shared<ProduceState>();
  ErrorCode all = ErrorCode::kNone;
  if (req.transactional_id) {
    all = ErrorCode::kTransactionalIdAuthorizationFailed;
  } else if (req.acks != 0 && req.acks != 1 && req.acks != -1) {
    all = ErrorCode::kInvalidRequiredAcks;
  }
  // Reserve every response slot first: completions fill them in place from other threads.
  for (const auto& t : req.topics) {
    kafka::ProduceTopicResponse tr;
    tr.name = std::string(t.name);
    for (const auto& p : t.partitions) {
      kafka::ProducePartitionResponse pr;
      pr.index = p.index;
      pr.error_code = all;
      tr.partitions.push_back(std::move(pr));
    }
    st->resp.topics.push_back(std::move(tr));
  }
  if (req.acks == 0) {
    st->none = true;
    call.respond(KafkaReply{.none = true});
  }
  st->call = std::move(call);
  if (all == ErrorCode::kNone) {
    for (size_t ti = 0; ti < req.topics.size(); ++ti) {
      const auto& t = req.topics[ti];
      const std::string topic(t.name);
      for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
        const auto& part = t.partitions[pi];
        kafka::ProducePartitionResponse* out = &st->resp.topics[ti].partitions[pi];
        if (!part.records || part.records->empty()) {
          out->error_code = ErrorCode::kCorruptMessage;
          out->error_message = "no records";
          continue;
        }
        auto found = d_.topics->Find(topic, PartitionId(part.index));
        if (!found.ok()) {
          out->error_code = ErrorCode::kUnknownTopicOrPartition;
          continue;
        }
        Partition& p = **found;
        st->outstanding.fetch_add(1, std::memory_order_relaxed);
        LocalAppendResult res;
        {
          MutexLock lock(p.mu);
          res = d_.appender->Append(p, *part.records, [st, out](Result<Offset> o) {
            if (o.ok()) {
              out->base_offset = o->value();
            } else {
              out->error_code = ToKafkaError(o.status());
              out->error_message = o.status().ToString();
            }
            st->Done();
          });
          out->log_start_offset = res.log_start.value();
        }
        if (res.prefault.length != 0) {
          // On whichever listener thread is free: the next appends find the pages ready.
          if (io_ != nullptr) {
            asio::post(*io_, [pf = std::move(res.prefault)] { pf.Run(); });
          } else {
            res.prefault.Run();
          }
        }
        if (res.pending) continue;  // completes through the callback
        if (!res.status.ok()) {
          out->error_code = ToKafkaError(res.status);
          out->error_message = res.status.ToString();
          RDMQ_LOG(kDebug, "kafka", "produce refused")
              .kv("partition", p.where())
              .kv("client", st->call.client_id())
              .kv("error", res.status);
        } else if (res.duplicate && res.base_offset == kNoOffset) {
          // Stored, but longer ago than the last five batches: the client treats this as done.
          out->error_code = ErrorCode::kDuplicateSequenceNumber;
        } else {
          out->base_offset = res.base_offset.value();
        }
        st->Done();
      }
    }
  }
  st->Done();
}

}  // namespace rdmq::broker::internal
