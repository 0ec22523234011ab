// Moving a partition's batches between the Cores of a cluster producer (core.h, Handoff;
// cluster_producer.h). When a partition's leader moves, the Core of the old leader gives up the
// partition (Release: the lease, the open batch sealed, every batch not acknowledged copied out
// of its arena in order) and the Core of the new leader takes them (Adopt: copied into its arena
// and queued, to be written on a lease it opens there). The batches keep their producer id,
// epoch and sequences (the Cores share the producer's identity), so the new leader, which holds
// the producer's state as far as the log was replicated to it, completes the batches it already
// has (LeaseOpened, by last_sequence) instead of storing them twice.
#include <cstring>

#include "producer/core.h"
#include "rdmq/common/log.h"

namespace rdmq::producer {

using protocol::WireError;

namespace {

// Fails batches that could not move: their futures and callbacks get `s`. No lock held.
void FailMoved(std::vector<Handoff::Moved>& batches, const Status& s, FailureLog& failures) {
  for (Handoff::Moved& m : batches) {
    SendFuture::State& st = *m.state;
    if (st.done.load(std::memory_order_relaxed) == 0) st.status = s;
    failures.Add(s, st.records.size());
    for (auto& [i, cb] : m.callbacks) cb(s);
    st.done.store(1, std::memory_order_release);
  }
  batches.clear();
}

std::string Name(std::string_view topic, PartitionId p) {
  return std::string(topic) + "-" + std::to_string(p.value());
}

}  // namespace

std::vector<std::string> Core::Stranded() {
  std::vector<std::string> out;
  const bool lost = lost_.load(std::memory_order_relaxed);
  for (PState* ps : topics_.Partitions()) {
    PLock lock(this, *ps, std::defer_lock);
    if (!lock.TryLock()) continue;
    if (ps->lease.open || !ps->fatal.ok() || !ps->tracker.has_queued()) continue;
    if (!lost && ps->lease.last_error.ok()) continue;
    if (out.empty() || out.back() != ps->topic->name) out.push_back(ps->topic->name);
  }
  return out;
}

Handoff Core::Release(std::string_view topic, PartitionId p) {
  Handoff h;
  h.producer_id = producer_id_;
  TopicState* t = topics_.Find(topic);
  if (t == nullptr || p.value() < 0 || p.value() >= t->partitions) return h;
  PState& ps = *t->parts[static_cast<size_t>(p.value())];
  PLock lock(this, ps);
  h.has_state = true;
  // The lease is over here (the broker no longer leads the partition, or is gone): what is in
  // flight goes back to the queue, in order, to be written at the new leader.
  LeaseLost(ps, Status(WireError::kNotLeader, "the partition's leader moved"));
  Seal(ps, /*post=*/false);
  h.waiting_since = ps.tracker.waiting_since();
  h.epoch = Epoch(ps);
  h.next_sequence = ps.next_sequence;
  h.gap = ps.tracker.gap();
  h.mode = ps.mode;
  for (TrackedBatch* tb : ps.tracker.TakeAll()) {
    auto* b = static_cast<Batch*>(tb);
    Handoff::Moved& m = h.batches.emplace_back();
    m.bytes.assign(b->buf, b->buf + b->size);
    m.count = b->count;
    m.base_sequence = b->base_sequence;
    m.state = std::move(b->state);
    m.callbacks = std::move(b->callbacks);
    if (ChunkCursor::Unref(b->chunk)) ReleaseChunk(*b->chunk);
    delete b;
    unacked_.fetch_sub(1, std::memory_order_acq_rel);
  }
  ps.moved = true;
  ps.lease.last_error = Status::Ok();
  RDMQ_LOG(kInfo, "producer", "the partition's leader moved; its batches go to the new leader")
      .kv("partition", Name(topic, p))
      .kv("batches", h.batches.size())
      .kv("from", conn_->address());
  NotifySleepers();
  return h;
}

void Core::Adopt(std::string_view topic, PartitionId p, Handoff h) {
  Status why;
  auto t = topics_.Get(topic);
  if (!t.ok()) {
    why = t.status();
  } else if (p.value() < 0 || p.value() >= (*t)->partitions) {
    why = Status(WireError::kUnknownPartition, "the broker knows no partition " + Name(topic, p));
  } else if (!h.batches.empty() && h.producer_id != producer_id_) {
    why =
        Status(Errc::kInternal, "batches of producer " + std::to_string(h.producer_id.value()) +
                                    " cannot be written by producer " + std::to_string(producer_id_.value()));
  }
  std::vector<Handoff::Moved> left;  // not taken: failed below, with no lock held
  if (why.ok()) {
    PState& ps = *(*t)->parts[static_cast<size_t>(p.value())];
    PLock lock(this, ps);
    ps.moved = false;
    if (!ps.fatal.ok()) {
      why = ps.fatal;
    } else if (!ps.tracker.idle() || ps.open_batch != nullptr) {
      // Cannot happen while the cluster producer routes the partition's records elsewhere.
      why = Status(Errc::kInternal, Name(topic, p) + " has records of its own at the new leader");
    }
    if (why.ok() && h.has_state) {
      // The partition's sequences continue here, batches or not: a fresh numbering would make
      // the broker take the next records for ones it has (last_sequence) and drop them.
      if (ps.mode != h.mode) {  // nothing is in flight here: the mode may change
        ps.mode = h.mode;
        ps.tracker.set_mode(h.mode);
      }
      ps.epoch_bumps = static_cast<int16_t>(h.epoch - producer_epoch_);
      ps.next_sequence = h.next_sequence;
      if (h.batches.empty() && h.gap >= 0) ps.tracker.RestoreGap(h.gap);
    }
    if (why.ok() && !h.batches.empty()) {
      const size_t chunk_size = arena_.chunk_size();
      size_t i = 0;
      for (; i < h.batches.size(); ++i) {
        Handoff::Moved& m = h.batches[i];
        const size_t size = m.bytes.size();
        if (!ps.chunks.Fits(size, chunk_size)) {
          if (Chunk* old = ps.chunks.Retire()) ReleaseChunk(*old);
          auto c = AllocChunks(ps, static_cast<uint32_t>((size + chunk_size - 1) / chunk_size));
          if (!c.ok()) {
            why = c.status();
            break;
          }
          ps.chunks.Start(*c);
        }
        auto* b = new Batch();
        b->state = std::move(m.state);
        b->callbacks = std::move(m.callbacks);
        b->chunk = ps.chunks.Take();
        b->buf = arena_.data(*b->chunk) + ps.chunks.offset();
        b->capacity = size;
        std::memcpy(b->buf, m.bytes.data(), size);
        b->size = size;
        b->count = m.count;
        b->base_sequence = m.base_sequence;
        b->created_ns = MonoNanos();
        ps.chunks.Advance(size);
        unacked_.fetch_add(1, std::memory_order_relaxed);
        ps.tracker.Enqueue(b);
      }
      // The first failed sequence: a batch that failed before the move, or the first left here.
      int32_t gap = h.gap;
      if (i < h.batches.size() && h.batches[i].base_sequence >= 0 &&
          (gap < 0 || h.batches[i].base_sequence < gap))
        gap = h.batches[i].base_sequence;
      if (gap >= 0) ps.tracker.RestoreGap(gap);
      left.assign(std::make_move_iterator(h.batches.begin() + static_cast<ptrdiff_t>(i)),
                  std::make_move_iterator(h.batches.end()));
      h.batches.clear();
      // The I/O thread opens a lease here and writes them; the delivery clock runs on from
      // when they started waiting at the old leader.
      ps.lease.retry_at_ns = 0;
      ps.tracker.LeaseUnavailable(h.waiting_since != 0 ? h.waiting_since : MonoNanos());
      RDMQ_LOG(kInfo, "producer", "took over a partition's batches from its old leader")
          .kv("partition", Name(topic, p))
          .kv("batches", i)
          .kv("to", conn_->address());
    }
  }
  if (!why.ok()) {
    if (left.empty()) left = std::move(h.batches);
    if (!left.empty()) {
      RDMQ_LOG(kWarn, "producer", "batches could not move to the partition's new leader")
          .kv("partition", Name(topic, p))
          .kv("batches", left.size())
          .kv("error", why);
    }
    FailMoved(left, why, failures_);
  }
  io_cv_.NotifyAll();
}

}  // namespace rdmq::producer
