#include "commit_poller.h"

#include <utility>

#include "rdmq/common/adaptive_spin.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

constexpr auto kIdleSlice = std::chrono::milliseconds(10);
constexpr auto kDeepIdleSlice = std::chrono::milliseconds(50);
constexpr uint64_t kDeepIdleNs = 1'000'000'000;

}  // namespace

std::shared_ptr<Lease> CommitPoller::OnReceive(const fabric::Completion& c) {
  auto session = d_.sessions->ByEndpoint(c.endpoint_id);
  if (!session) return nullptr;
  if (c.status) {
    Counters::Add(d_.counters->data_errors);
    if (c.status == fabric::FabricErrc::kPeerGone || c.status == fabric::FabricErrc::kFlushed) {
      d_.end_session(session->client_id, "data endpoint closed");
    } else {
      RDMQ_LOG(kWarn, "broker", "receive failed on a data endpoint")
          .kv("client", session->client_id)
          .kv("error", Status(c.status));
    }
    return nullptr;
  }
  session->Repost(1);
  if (!c.has_imm) return nullptr;  // clients send nothing else
  std::shared_ptr<Lease> l = d_.leases->ByIndex(c.imm);
  if (!l || l->session != session) {
    RDMQ_LOG(kDebug, "broker", "commit for an unknown or ended lease ignored")
        .kv("client", session->client_id)
        .kv("imm", c.imm);
    return nullptr;
  }
  return l;
}

void CommitPoller::CommitArrivals(std::span<Arrival> arrivals) {
  uint64_t lens[kPollBatch];
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (!arrivals[i].lease) continue;
    // This lease's later ranges in the poll: the producer wrote them one after another at the
    // committed end (one connection delivers in order), so they commit as one.
    size_t k = 0;
    lens[k++] = arrivals[i].bytes;
    for (size_t j = i + 1; j < arrivals.size(); ++j) {
      if (arrivals[j].lease != arrivals[i].lease) continue;
      lens[k++] = arrivals[j].bytes;
      arrivals[j].lease.reset();
    }
    Commit(arrivals[i].lease, {lens, k});
    arrivals[i].lease.reset();
  }
}

void CommitPoller::Commit(const std::shared_ptr<Lease>& l, std::span<const uint64_t> ranges) {
  const uint64_t t0 = MonoNanos();
  Partition& p = *l->partition;
  MutexLock lock(p.mu);
  if (l->ended) return;  // already told
  if (ranges.size() > 1) {
    uint64_t total = 0;
    for (uint64_t len : ranges) total += len;
    uint64_t duplicates = 0;
    if (TryCommit(p, *l, total, &duplicates).ok()) {
      Counters::Add(d_.counters->duplicates, duplicates);
      Counters::Add(d_.counters->commit_groups);
      return Committed(p, l, total, ranges.size(), t0);
    }
    // One of them is refused: commit those before it, as if each had come alone (and count
    // duplicates then, once).
    Counters::Add(d_.counters->commit_groups_split);
  }
  for (uint64_t len : ranges) {
    uint64_t duplicates = 0;
    const Status s = TryCommit(p, *l, len, &duplicates);
    Counters::Add(d_.counters->duplicates, duplicates);
    if (!s.ok()) return Refuse(p, l, len, s);
    Committed(p, l, len, 1, t0);
  }
}

Status CommitPoller::TryCommit(Partition& p, Lease& l, uint64_t byte_len, uint64_t* duplicates) {
  if (p.deleted()) return TopicDeleted(p.topic_name());
  if (l.replica()) return ReplicaCommitOnly(l);
  // acks=all: refused before it is committed while too few replicas are in sync (the producer
  // opens a lease again, which waits for them).
  if (l.ack_in_sync) RDMQ_RETURN_IF_ERROR(p.CheckAcksAll());
  const ActiveSegment& a = p.active();
  const Committer who{l.producer_id, l.producer_epoch, l.shared()};
  const CommitValidator v = p.Validator();
  RDMQ_RETURN_IF_ERROR(v.CheckImmediate(who, l.segment_base, a, byte_len));
  const BatchCheck check = v.CheckBatches(who, {a.data + a.committed.value(), byte_len});
  *duplicates = check.duplicates;
  RDMQ_RETURN_IF_ERROR(check.status);
  storage::CommitRequest req;
  req.mode = storage::CommitMode::kExclusive;
  req.segment = a.base;
  req.position = a.committed;
  req.length = byte_len;
  auto out = p.log().Commit(req);
  if (!out.ok()) return out.status();
  if (l.producer_id.value() >= 0) p.producers().Set(l.producer_id, check.next);
  p.Advance(out->committed, out->high_watermark);
  return Status::Ok();
}

void CommitPoller::Committed(Partition& p, const std::shared_ptr<Lease>& l, uint64_t byte_len, size_t ranges,
                             uint64_t t0) {
  p.NoteIn(byte_len);
  p.MarkDirty();
  Counters::Add(d_.counters->commits, ranges);
  d_.leases->Active(*l);
  d_.leases->AckCommitted(p, l);
  d_.publisher->Publish(p);
  if (d_.preparer != nullptr) d_.preparer->MaybeWant(p);
  d_.counters->data_commit_ns.Observe(MonoNanos() - t0);
}

void CommitPoller::Refuse(Partition& p, const std::shared_ptr<Lease>& l, uint64_t byte_len, const Status& s) {
  Counters::Add(d_.counters->commit_errors);
  RDMQ_LOG(kWarn, "broker", "commit refused; the lease ends")
      .kv("partition", p.where())
      .kv("lease", l->id)
      .kv("client", l->session->client_id)
      .kv("error", s);
  d_.leases->EndLocked(p, l, protocol::ToWireError(s), true);
  // The refused bytes lie at the committed end: recovery's forward scan would adopt a batch
  // there whose CRC and offsets are fine (a duplicate, a sequence gap). Spoil its header
  // now that the producer can no longer write.
  if (!p.deleted() && l->segment_base == p.active().base) p.SpoilTail(p.active().committed, byte_len);
}

void CommitPoller::Loop() {
  fabric::Completion wc[kPollBatch];
  Arrival arrivals[kPollBatch];
  uint64_t idle_since = MonoNanos();  // the last completion's time
  // Spin only after real work, and only while it pays (AdaptiveSpin): a wait slice that ends with
  // nothing to do goes straight back to sleep (resetting the idle clock after every 10 ms slice
  // made an idle broker spin `spin_us` out of every 10 ms, about 9% of a core), and commits that
  // come further apart than the spin find a poller that sleeps at once (spinning 1 ms after each
  // of a producer's 1 MiB batches, 2 ms apart, took half a core from it on 2 vCPUs).
  AdaptiveSpin policy(spin_ns_);
  bool idle = true;      // an empty poll since the last completion (none yet: no spin)
  uint64_t spin_ns = 0;  // how long this idle period spins
  uint32_t spins = 0;
  while (true) {
    const size_t n = d_.recv_cq->Poll(wc);
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      // A failed receive may end a session: what its producer delivered before is committed first.
      if (wc[i].status) CommitArrivals({arrivals, std::exchange(k, 0)});
      if (auto l = OnReceive(wc[i])) arrivals[k++] = Arrival{std::move(l), wc[i].byte_len};
    }
    CommitArrivals({arrivals, k});
    const size_t m = d_.send_cq->Poll(wc);
    for (size_t i = 0; i < m; ++i) {
      if (wc[i].status) Counters::Add(d_.counters->data_errors);
      if (wc[i].status && wc[i].status != fabric::FabricErrc::kPeerGone &&
          wc[i].status != fabric::FabricErrc::kFlushed) {
        RDMQ_LOG(kDebug, "broker", "data-plane operation failed")
            .kv("endpoint", wc[i].endpoint_id)
            .kv("op", fabric::OpcodeName(wc[i].opcode))
            .kv("error", Status(wc[i].status));
      }
    }
    if (n != 0 || m != 0) {
      if (n != 0) Counters::Add(d_.counters->data_receives, n);
      if (m != 0) Counters::Add(d_.counters->data_sends, m);
      const uint64_t now = MonoNanos();
      if (idle) policy.OnIdleGap(now - idle_since);
      idle = false;
      idle_since = now;
      continue;
    }
    if (stopping_.load(std::memory_order_acquire)) break;
    if (!idle) {  // the burst just ended
      idle = true;
      spin_ns = policy.SpinNs();
      if (spin_ns != 0) Counters::Add(d_.counters->poller_spins);
    }
    if (MonoNanos() - idle_since < spin_ns) {
      // Give way now and then: on a machine where producers and consumers need every core,
      // a poller that never yields takes a third of the CPU from them.
      if ((++spins & 31) == 0) {
        std::this_thread::yield();
      } else {
        CpuRelax();
      }
      continue;
    }
    spin_ns = 0;
    // The wait ends at once when a completion arrives; its length only bounds how often an idle
    // poller looks anyway (and how long Stop waits). Idle for a second: look less often.
    const bool deep_idle = MonoNanos() - idle_since >= kDeepIdleNs;
    (void)d_.recv_cq->Wait(deep_idle ? kDeepIdleSlice : kIdleSlice);
    Counters::Add(d_.counters->poller_wakeups);
  }
}

}  // namespace rdmq::broker::internal
