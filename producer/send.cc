// The send path (core.h): Send picks the partition, encodes the record into the partition's open
// batch (in place, in the record arena) and seals the batch when it is full, when `linger.ms`
// passed, or with linger 0 when nothing of the partition is in flight. Sealing compresses the
// batch in place when `compression.type` names a codec.
#include <random>

#include "producer/core.h"
#include "producer/errors.h"
#include "rdmq/common/log.h"
#include "rdmq/producer/partitioner.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::producer {

using protocol::WireError;

namespace {

constexpr uint32_t kLingerCheckEvery = 16;

uint32_t Random() {
  thread_local std::mt19937 rng{std::random_device{}()};
  return rng();
}

}  // namespace

Status Core::Send(const ProducerRecord& r, SendCallback* cb, SendFuture* fut) {
  if (closed_.load(std::memory_order_acquire))
    return Status(Errc::kFailedPrecondition, "the producer is closed");
  RDMQ_ASSIGN_OR_RETURN(TopicState * t, topics_.Get(r.topic));
  int32_t part = r.partition;
  if (part < 0) {
    if (r.key) {
      part = PartitionForKey(*r.key, t->partitions);
    } else {
      part = t->sticky.load(std::memory_order_relaxed);
      if (part < 0 || part >= t->partitions) {
        part = static_cast<int32_t>(Random() % static_cast<uint32_t>(t->partitions));
        t->sticky.store(part, std::memory_order_relaxed);
      }
    }
  } else if (part >= t->partitions) {
    return Status(WireError::kUnknownPartition,
                  "topic '" + t->name + "' has " + std::to_string(t->partitions) +
                      " partitions; there is no partition " + std::to_string(part));
  }
  PState& ps = *t->parts[static_cast<size_t>(part)];
  storage::RecordInput in;
  in.key = r.key;
  in.value = r.value;
  std::vector<storage::HeaderInput> hdrs;
  if (!r.headers.empty()) {
    hdrs.reserve(r.headers.size());
    for (const auto& h : r.headers) hdrs.push_back({h.key, std::string_view(h.value)});
    in.headers = hdrs;
  }
  // CreateTime from the coarse clock: a tick's precision, at a third of the precise clock's cost
  // per record.
  in.timestamp = r.timestamp_ms >= 0 ? TimestampMs(r.timestamp_ms) : CoarseWallMillis();

  PLock lock(this, ps);
  RDMQ_RETURN_IF_ERROR(Takes(ps));
  if (!ps.lease.open && ps.tracker.idle() && MonoNanos() >= ps.lease.retry_at_ns) {
    // First use (or nothing queued after an error): open the lease now, so that errors such
    // as an unknown topic or a busy partition come back from this Send.
    Status s = Acquire(ps);
    if (!s.ok()) {
      // NOT_LEADER is not for ever (it is retriable): the record goes back to the cluster
      // producer, which routes it to the leader; leadership may come back here.
      if (!Retriable(s)) ps.fatal = s;
      if (!Retriable(s) || s.is(WireError::kNotLeader) ||
          (s.is(WireError::kPartitionBusy) && cfg_.busy == BusyPolicy::kFail)) {
        return s;
      }
      ps.lease.retry_at_ns = MonoNanos() + RetryAfterNs(s);
    }
  }
  // Acks that arrived since the last look (cheap: one load of the ack block's generation).
  if (ps.tracker.in_flight() != 0 && ps.ack.Pending()) {
    data_.Drain();
    CheckAcks(ps);
  }
  for (int attempt = 0;; ++attempt) {
    if (ps.open_batch == nullptr) {
      const size_t need = storage::kBatchHeaderSize + storage::EncodedRecordSize(in, 0, 0);
      RDMQ_RETURN_IF_ERROR(NewBatch(ps, need));
      RDMQ_RETURN_IF_ERROR(Takes(ps));  // (NewBatch may have waited for memory unlocked)
      if (ps.open_batch == nullptr) continue;
    }
    Batch* b = ps.open_batch;
    const size_t before = b->builder->size();
    if (b->builder->Add(in)) {
      const uint32_t index = static_cast<uint32_t>(b->state->records.size());
      if (index == 64) {
        // A batch that gets this far is filling up: room for as many entries as records like
        // this one fill it, so that it does not regrow (and copy) a dozen times on the way.
        const size_t fit = b->capacity / std::max<size_t>(1, b->builder->size() - before);
        b->state->records.reserve(std::clamp<size_t>(fit, 128, 65536));
      }
      b->state->records.push_back({in.timestamp, r.key ? static_cast<uint32_t>(r.key->size()) : 0u,
                                   r.value ? static_cast<uint32_t>(r.value->size()) : 0u});
      if (cb != nullptr && *cb) b->callbacks.emplace_back(index, std::move(*cb));
      if (fut != nullptr) *fut = b->state.Future(index);
      // Sealed when full (or the next record like this one would not fit); otherwise with linger
      // 0 at once when nothing is in flight (else records batch up until the ack of what is in
      // flight arrives, seen by the next Send or by the I/O thread), or once linger.ms passed:
      // looked at every kLingerCheckEvery records (a clock reading costs about 20 ns on the
      // development VM, a tenth of a record's whole path), and by the I/O thread on every tick.
      const size_t size = b->builder->size();
      const bool full = size >= cfg_.batch_size || b->capacity - size < size - before;
      if (full || (cfg_.linger.count() == 0 ? ps.tracker.idle()
                                            : (index + 1) % kLingerCheckEvery == 0 &&
                                                  MonoNanos() - b->created_ns >=
                                                      static_cast<uint64_t>(cfg_.linger.count()) * 1000)) {
        Seal(ps);
      }
      break;
    }
    if (b->builder->count() == 0 || attempt > 1) {
      // Not even one record fits a fresh batch: it is too large for the broker.
      const size_t need = storage::kBatchHeaderSize + storage::EncodedRecordSize(in, 0, 0);
      return Status(WireError::kRecordTooLarge,
                    "a record of " + std::to_string(need) +
                        " bytes (with the batch header) exceeds max.message.bytes " +
                        std::to_string(t->max_message_bytes) + " of topic '" + t->name + "'");
    }
    Seal(ps);
  }
  app_active_.store(true, std::memory_order_relaxed);
  return Status::Ok();
}

Status Core::Takes(const PState& ps) const {
  if (!ps.fatal.ok()) return ps.fatal;
  if (ps.moved) {
    return Status(WireError::kNotLeader,
                  ps.topic->name + "-" + std::to_string(ps.partition.value()) + " moved to another broker");
  }
  return Status::Ok();
}

Status Core::NewBatch(PState& ps, size_t need) {
  const size_t max_batch = ps.topic->max_message_bytes;
  size_t cap = std::min<size_t>(cfg_.batch_size, max_batch);
  cap = std::max(cap, need);
  if (need > max_batch) {
    return Status(WireError::kRecordTooLarge,
                  "a record of " + std::to_string(need) +
                      " bytes (batch overhead included) exceeds max.message.bytes " +
                      std::to_string(max_batch) + " of topic '" + ps.topic->name + "'");
  }
  const size_t chunk_size = arena_.chunk_size();
  if (!ps.chunks.Fits(cap, chunk_size)) {
    if (Chunk* old = ps.chunks.Retire()) ReleaseChunk(*old);
    const uint32_t n = static_cast<uint32_t>((cap + chunk_size - 1) / chunk_size);
    RDMQ_ASSIGN_OR_RETURN(Chunk * c, AllocChunks(ps, n));
    if (ps.open_batch != nullptr || !Takes(ps).ok()) {  // another thread opened one, or it moved, meanwhile
      if (c->refs == 0) ReleaseChunk(*c);
      return Status::Ok();
    }
    ps.chunks.Start(c);
  }
  auto* b = new Batch();
  b->state = StateRef::Make();
  b->state->core = shared_from_this();
  b->state->topic = ps.topic->name;
  b->state->partition = ps.partition;
  b->chunk = ps.chunks.Take();
  b->buf = arena_.data(*b->chunk) + ps.chunks.offset();
  b->capacity = cap;
  storage::BatchOptions o;
  o.base_offset =
      ps.mode == PartitionMode::kExclusive ? Offset(0) : kNoOffset;  // exclusive: patched when posted
  o.producer_id = producer_id_;
  o.producer_epoch = producer_id_ >= ProducerId(0) ? Epoch(ps) : int16_t{-1};
  b->base_sequence = producer_id_ >= ProducerId(0) ? ps.next_sequence : -1;
  o.base_sequence = b->base_sequence;
  b->builder.emplace(b->buf, cap, o);
  b->created_ns = MonoNanos();
  ps.open_batch = b;
  return Status::Ok();
}

Result<Chunk*> Core::AllocChunks(PState& ps, uint32_t n) {
  const auto deadline = Clock::now() + cfg_.max_block;
  while (true) {
    RDMQ_ASSIGN_OR_RETURN(Chunk * c, arena_.TryAllocate(n));
    if (c != nullptr) return c;
    if (Clock::now() >= deadline) {
      return Status(Errc::kTimeout, "buffer.memory (" + std::to_string(cfg_.buffer_memory) +
                                        " bytes) stayed full for max.block.ms");
    }
    // Wait for acks with the partition unlocked (acks need it).
    ps.mu.Unlock();
    WaitFor([&] { return arena_.HasRoom(n); },
            std::min(deadline, Clock::now() + std::chrono::milliseconds(10)));
    ps.mu.Lock();
  }
}

void Core::ReleaseChunk(const Chunk& c) {
  arena_.Free(c);
  NotifySleepers();
}

void Core::Seal(PState& ps, bool post) {
  Batch* b = ps.open_batch;
  if (b == nullptr) return;
  ps.open_batch = nullptr;
  if (Status s = b->Close(cfg_.compression); !s.ok()) {
    RDMQ_LOG(kWarn, "producer", "a batch could not be compressed; it is sent uncompressed")
        .kv("codec", compression::CodecName(cfg_.compression))
        .kv("error", s.ToString());
  }
  if (b->base_sequence >= 0) ps.next_sequence += b->count;
  ps.chunks.Advance(b->size);
  unacked_.fetch_add(1, std::memory_order_relaxed);
  ps.tracker.Enqueue(b);
  // Sticky partitioning: the next keyless records go elsewhere.
  TopicState* t = ps.topic;
  if (t->partitions > 1 && t->sticky.load(std::memory_order_relaxed) == ps.partition.value()) {
    t->sticky.store(static_cast<int32_t>((static_cast<uint32_t>(ps.partition.value()) + 1 +
                                          Random() % static_cast<uint32_t>(t->partitions - 1)) %
                                         static_cast<uint32_t>(t->partitions)),
                    std::memory_order_relaxed);
  }
  if (post) PostSealed(ps);
}

}  // namespace rdmq::producer
