// Produce: each partition's batches go through the LocalAppender (the broker as one more shared
// writer); the reply waits until every partition's offsets are assigned. acks=0 gets no reply
// at all (Kafka's rule); acks=1 is answered once the log committed the batches (durably, as the
// topic's durability says); acks=all the same on a partition without followers, and on a
// replicated one once every in-sync replica holds them (Partition::WhenReplicated), refused
// with NOT_ENOUGH_REPLICAS before anything is written while fewer than min.insync.replicas are
// in sync.
//
// Produce requests that a connection read together (a client pipelining them) are appended
// together: the batches of consecutive requests for one partition go into the log as one range,
// one commit and so one persist (group commit), and each request's base offset is the range's
// base plus the records of the requests before it. A group that the checks refuse before
// anything is written (a bad batch, a sequence gap, a retry of stored batches) is appended
// request by request instead, so every request gets the answer it would have got alone.
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

#include "broker/kafka/asio.h"
#include "broker/kafka/front_door.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"
#include "rdmq/kafka/produce_fetch.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::broker::internal {

namespace asio = boost::asio;
using kafka::ErrorCode;

// One Produce request's partitions, completed as their appends complete (possibly later, on
// other threads); the last one to complete sends the reply.
struct KafkaProduceState {
  KafkaCall call;
  kafka::ProduceResponse resp;
  std::atomic<int> outstanding{1};  // one for the request itself, released when all were tried
  void Done() {
    if (outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (none) return;
    KafkaFrontDoor::Reply(call, resp);
    if (latency != nullptr) latency->Observe(MonoNanos() - start_ns);
  }
  bool none = false;  // acks=0: replied already (with nothing)
  uint64_t start_ns = MonoNanos();
  metrics::Histogram* latency = nullptr;
};

// One request's batches for one partition, and where its answer goes.
struct KafkaPartWrite {
  std::shared_ptr<KafkaProduceState> st;
  kafka::ProducePartitionResponse* out = nullptr;
  std::span<const std::byte> records;
  bool all = false;  // acks=all
};

// A durable partition's Kafka writes waiting for the append in progress (its persist) to end.
struct KafkaAppendQueue {
  Mutex mu;
  bool busy GUARDED_BY(mu) = false;  // a drain is posted or running
  std::vector<KafkaPartWrite> waiting GUARDED_BY(mu);
};

namespace {

using ProduceState = KafkaProduceState;
using PartWrite = KafkaPartWrite;

// A group's appends are bounded so that one range never nears a segment's size.
constexpr size_t kMaxGroupBytes = size_t{8} << 20;

// The producer id and epoch of the first batch (-1, -1 when it does not decode: the checks say why).
std::pair<int64_t, int16_t> ProducerOf(std::span<const std::byte> batches) {
  storage::BatchHeader h;
  if (!storage::DecodeBatchHeader(batches, &h).ok()) return {-1, -1};
  return {h.producer_id.value(), h.producer_epoch};
}

// Records (offsets) in whole, checked batches.
int64_t OffsetCount(std::span<const std::byte> batches) {
  int64_t n = 0;
  for (size_t pos = 0; pos < batches.size();) {
    storage::BatchHeader h;
    if (!storage::DecodeBatchHeader(batches.subspan(pos), &h).ok()) break;
    n += h.offset_count();
    pos += h.total_size();
  }
  return n;
}

void Fail(const PartWrite& w, const Status& s) {
  w.out->error_code = ToKafkaError(s);
  w.out->error_message = s.ToString();
}

// A write whose records end before `end` is stored: acks=all waits until the in-sync replicas
// hold them too. The caller holds p's lock (the append's completion runs under it).
void Stored(Partition& p, const PartWrite& w, Offset end) NO_THREAD_SAFETY_ANALYSIS {
  if (!w.all) {
    w.st->Done();
    return;
  }
  p.WhenReplicated(end, [w](const Status& s) {
    if (!s.ok()) Fail(w, s);
    w.st->Done();
  });
}

// The answers of a group appended as one range starting at `base` (or failed as one).
void Complete(Partition& p, const std::vector<PartWrite>& writes, const Result<Offset>& base) {
  if (!base.ok()) {
    for (const PartWrite& w : writes) {
      Fail(w, base.status());
      w.st->Done();
    }
    return;
  }
  // (A request answers only once all its writes are Done, so each may complete as it goes.)
  int64_t next = base->value();
  for (const PartWrite& w : writes) {
    w.out->base_offset = next;
    next += OffsetCount(w.records);
    Stored(p, w, Offset(next));
  }
}

}  // namespace

// Decodes a Produce request and reserves its response slots; nullptr when it was answered
// already (malformed: the connection closes).
static std::shared_ptr<ProduceState> Prepare(
    KafkaCall call, kafka::Reader& r, kafka::ProduceRequest* req,
    const std::function<void(const KafkaCall&, const Status&)>& malformed) {
  if (Status s = kafka::Decode(r, call.header.api_version, req); !s.ok()) {
    malformed(call, s);
    return nullptr;
  }
  auto st = std::make_shared<ProduceState>();
  ErrorCode all = ErrorCode::kNone;
  if (req->transactional_id) {
    all = ErrorCode::kTransactionalIdAuthorizationFailed;
  } else if (req->acks != 0 && req->acks != 1 && req->acks != -1) {
    all = ErrorCode::kInvalidRequiredAcks;
  }
  // Reserve every response slot first: completions fill them in place from other threads.
  for (const auto& t : req->topics) {
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
  if (req->acks == 0) {
    st->none = true;
    call.respond(KafkaReply{.none = true});
  }
  st->call = std::move(call);
  if (all != ErrorCode::kNone) req->topics.clear();  // answered with the request's error
  return st;
}

void KafkaFrontDoor::Produce(KafkaCall call, Reader& r) {
  std::vector<std::pair<KafkaCall, Reader>> one;
  one.emplace_back(std::move(call), r);
  ProduceRun(one);
}

void KafkaFrontDoor::ProduceRun(std::vector<std::pair<KafkaCall, Reader>>& run) {
  // Decoded requests must outlive the appends: their views point into the frames, which the
  // states' calls keep.
  std::vector<kafka::ProduceRequest> reqs(run.size());
  std::vector<std::shared_ptr<ProduceState>> states;
  // Every (topic, partition)'s writes in request order; topics by first appearance.
  std::vector<std::pair<std::string, int32_t>> order;
  std::map<std::pair<std::string, int32_t>, std::vector<PartWrite>> writes;
  auto malformed = [this](const KafkaCall& c, const Status& s) { Malformed(c, s); };
  for (size_t i = 0; i < run.size(); ++i) {
    auto st = Prepare(std::move(run[i].first), run[i].second, &reqs[i], malformed);
    if (!st) continue;
    st->latency = &d_.counters->kafka_produce_ns;
    states.push_back(st);
    for (size_t ti = 0; ti < reqs[i].topics.size(); ++ti) {
      const auto& t = reqs[i].topics[ti];
      const bool may = MayTopic(st->call, metadata::AclOperation::kWrite, t.name);
      for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
        const auto& part = t.partitions[pi];
        kafka::ProducePartitionResponse* out = &st->resp.topics[ti].partitions[pi];
        if (!may) {
          out->error_code = ErrorCode::kTopicAuthorizationFailed;
          continue;
        }
        if (!part.records || part.records->empty()) {
          out->error_code = ErrorCode::kCorruptMessage;
          out->error_message = "no records";
          continue;
        }
        std::pair<std::string, int32_t> key(std::string(t.name), part.index);
        auto [it, fresh] = writes.try_emplace(key);
        if (fresh) order.push_back(std::move(key));
        st->outstanding.fetch_add(1, std::memory_order_relaxed);
        it->second.push_back(PartWrite{st, out, *part.records, reqs[i].acks == -1});
      }
    }
  }
  for (const auto& key : order) AppendWrites(key.first, key.second, writes[key]);
  for (const auto& st : states) st->Done();
}

void KafkaFrontDoor::AppendWrites(const std::string& topic, int32_t index, std::vector<PartWrite>& writes) {
  auto found = d_.topics->Find(topic, PartitionId(index));
  if (!found.ok()) {
    for (PartWrite& w : writes) {
      w.out->error_code = ErrorCode::kUnknownTopicOrPartition;
      w.st->Done();
    }
    return;
  }
  std::shared_ptr<Partition> part = *found;
  // The connection goes back to reading while a listener thread appends and persists: what it
  // reads meanwhile joins the next group. (A partition that has a queue keeps using it, so a
  // topic altered to visibility cannot overtake writes still queued.)
  std::shared_ptr<KafkaAppendQueue> q;
  {
    MutexLock lock(part->mu);
    std::shared_ptr<KafkaAppendQueue>& mine = part->kafka_queue();
    if (!mine && io_ != nullptr && part->config().durability == metadata::Durability::kDurable) {
      mine = std::make_shared<KafkaAppendQueue>();
    }
    q = mine;
  }
  if (!q) {
    AppendNow(*part, writes);
    return;
  }
  {
    MutexLock lock(q->mu);
    for (PartWrite& w : writes) q->waiting.push_back(std::move(w));
    if (q->busy) return;  // the drain in progress takes them next
    q->busy = true;
  }
  asio::post(*io_, [this, part = std::move(part), q] { AppendQueued(part, q); });
}

void KafkaFrontDoor::AppendQueued(const std::shared_ptr<Partition>& p,
                                  const std::shared_ptr<KafkaAppendQueue>& q) {
  for (;;) {
    std::vector<PartWrite> batch;
    {
      MutexLock lock(q->mu);
      if (q->waiting.empty()) {
        q->busy = false;
        return;
      }
      batch.swap(q->waiting);
    }
    AppendNow(*p, batch);
  }
}

void KafkaFrontDoor::AppendNow(Partition& p, std::vector<PartWrite>& writes) {
  std::vector<LocalPrefault> prefaults;
  {
    MutexLock lock(p.mu);
    // acks=all writes wait for the replicas; refused before anything is written if too few are
    // in sync.
    const Status in_sync = p.CheckAcksAll();
    if (!in_sync.ok()) {
      std::vector<PartWrite> keep;
      for (PartWrite& w : writes) {
        if (!w.all) {
          keep.push_back(std::move(w));
          continue;
        }
        Fail(w, in_sync);
        w.st->Done();
      }
      writes.swap(keep);
    }
    size_t i = 0;
    while (i < writes.size()) {
      // The longest run from i of one producer's writes that fits one range (writes from
      // several connections meet here through the append queue; the checks take one producer
      // per range).
      const auto who = ProducerOf(writes[i].records);
      size_t j = i + 1, bytes = writes[i].records.size();
      while (j < writes.size() && bytes + writes[j].records.size() <= kMaxGroupBytes &&
             ProducerOf(writes[j].records) == who)
        bytes += writes[j++].records.size();
      if (j - i == 1 || !AppendGroup(p, std::span<PartWrite>(writes).subspan(i, j - i), &prefaults)) {
        for (; i < j; ++i) AppendOne(p, writes[i], &prefaults);
      }
      i = j;
    }
  }
  for (LocalPrefault& pf : prefaults) {
    // On whichever listener thread is free: the next appends find the pages ready.
    if (io_ != nullptr) {
      asio::post(*io_, [pf = std::move(pf)] { pf.Run(); });
    } else {
      pf.Run();
    }
  }
}

bool KafkaFrontDoor::AppendGroup(Partition& p, std::span<PartWrite> group,
                                 std::vector<LocalPrefault>* prefaults) {
  std::vector<std::span<const std::byte>> parts;
  parts.reserve(group.size());
  for (const PartWrite& w : group) parts.push_back(w.records);
  auto shared = std::make_shared<std::vector<PartWrite>>(group.begin(), group.end());
  LocalAppendResult res = d_.appender->Append(
      p, parts,
      [shared, part = p.shared_from_this()](const Result<Offset>& o) { Complete(*part, *shared, o); });
  if (!res.wrote && (!res.status.ok() || res.duplicate)) return false;  // nothing changed: one by one
  for (PartWrite& w : group) w.out->log_start_offset = res.log_start.value();
  if (res.prefault.length != 0) prefaults->push_back(std::move(res.prefault));
  if (res.pending) return true;  // completes through the callback
  if (!res.status.ok()) {
    RDMQ_LOG(kDebug, "kafka", "produce refused")
        .kv("partition", p.where())
        .kv("requests", static_cast<uint64_t>(group.size()))
        .kv("error", res.status);
    Complete(p, *shared, res.status);
  } else {
    Complete(p, *shared, res.base_offset);
  }
  return true;
}

void KafkaFrontDoor::AppendOne(Partition& p, PartWrite& w, std::vector<LocalPrefault>* prefaults) {
  LocalAppendResult res =
      d_.appender->Append(p, w.records, [w, part = p.shared_from_this()](Result<Offset> o) {
        if (!o.ok()) {
          Fail(w, o.status());
          w.st->Done();
          return;
        }
        w.out->base_offset = o->value();
        Stored(*part, w, *o + OffsetCount(w.records));
      });
  w.out->log_start_offset = res.log_start.value();
  if (res.prefault.length != 0) prefaults->push_back(std::move(res.prefault));
  if (res.pending) return;  // completes through the callback
  if (!res.status.ok()) {
    w.out->error_code = ToKafkaError(res.status);
    w.out->error_message = res.status.ToString();
    RDMQ_LOG(kDebug, "kafka", "produce refused")
        .kv("partition", p.where())
        .kv("client", w.st->call.client_id())
        .kv("error", res.status);
  } else if (res.duplicate && res.base_offset == kNoOffset) {
    // Stored, but longer ago than the last five batches: the client treats this as done.
    w.out->error_code = ErrorCode::kDuplicateSequenceNumber;
  } else {
    w.out->base_offset = res.base_offset.value();
    // (A retry of stored batches is acknowledged once they are replicated too.)
    Stored(p, w, res.base_offset + OffsetCount(w.records));
    return;
  }
  w.st->Done();
}

}  // namespace rdmq::broker::internal
