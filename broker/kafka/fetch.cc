// Fetch and ListOffsets. A Fetch reads each partition's batches straight out of the mapped log
// (PartitionLog::Read, CRC-checked) and hands them to the reply by reference, pinned until they
// are written: no copy, no re-encoding. When fewer than min_bytes are there and max_wait_ms is
// not over, it waits on the partitions' commit waiters (run by the broker's Publish on every
// commit) and a timer, whichever comes first, then reads again: no polling.
#include <mutex>
#include <tuple>

#include "broker/kafka/asio.h"
#include "broker/kafka/front_door.h"
#include "rdmq/common/clock.h"
#include "rdmq/kafka/metadata_offsets.h"
#include "rdmq/kafka/produce_fetch.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/errors.h"

namespace rdmq::broker::internal {

namespace asio = boost::asio;
using kafka::ErrorCode;

namespace {

struct FetchState : std::enable_shared_from_this<FetchState> {
  FetchState(KafkaCall c, asio::io_context& io)
      : call(std::move(c)), strand(asio::make_strand(io)), timer(strand) {}

  KafkaCall call;
  kafka::FetchRequest req;
  std::vector<bool> may_read;  // per req.topics: the client may read the topic (ACLs)
  TopicTable* topics = nullptr;
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;
  std::chrono::steady_clock::time_point deadline;
  // The current wait: the partitions' waiter ids; `waiting` is cleared by whoever ends it.
  bool waiting = false;
  std::vector<std::pair<std::weak_ptr<Partition>, uint64_t>> waiters;

  // Reads every partition. Replies when there is enough, the wait is over or `final`; otherwise
  // starts waiting (on the strand).
  void Attempt(bool final);
  void EndWait();
};

// One partition's part of a Fetch.
struct PartRead {
  kafka::FetchPartitionResponse out;
  size_t bytes = 0;
  std::shared_ptr<const void> pin;
  uint64_t generation = 0;               // the hw seen, to register a waiter only if nothing changed since
  std::shared_ptr<Partition> partition;  // when bytes were read: counted once the answer goes
  uint64_t offsets = 0;                  // offsets the bytes reach past the fetch offset
};

PartRead ReadPartition(TopicTable& topics, const std::string& topic, const kafka::FetchPartition& fp,
                       size_t budget) {
  PartRead pr;
  pr.out.index = fp.index;
  auto found = topics.Find(topic, PartitionId(fp.index));
  if (!found.ok()) {
    pr.out.error_code = ErrorCode::kUnknownTopicOrPartition;
    return pr;
  }
  Partition& p = **found;
  MutexLock lock(p.mu);
  if (p.deleted()) {
    pr.out.error_code = ErrorCode::kUnknownTopicOrPartition;
    return pr;
  }
  storage::PartitionLog& log = p.log();
  const Offset hw = log.HighWatermark();
  const Offset start = log.LogStartOffset();
  pr.out.high_watermark = hw.value();
  pr.out.last_stable_offset = hw.value();
  pr.out.log_start_offset = start.value();
  pr.generation = static_cast<uint64_t>(hw.value());
  const Offset from(fp.fetch_offset);
  if (from < start || from > hw) {
    pr.out.error_code = ErrorCode::kOffsetOutOfRange;
    return pr;
  }
  if (from == hw || budget == 0) return pr;
  const size_t limit = std::min<size_t>(budget, fp.max_bytes > 0 ? static_cast<size_t>(fp.max_bytes) : 1);
  auto rd = log.Read(from, limit);
  if (!rd.ok()) {
    pr.out.error_code = rd.status().is(storage::StorageErrc::kOffsetOutOfRange)
                            ? ErrorCode::kOffsetOutOfRange
                            : ErrorCode::kKafkaStorageError;
    return pr;
  }
  if (!rd->bytes.empty()) {
    pr.out.records.push_back(rd->bytes);
    pr.bytes = rd->bytes.size();
    pr.pin = rd->pin;
    pr.partition = *found;
    pr.offsets = static_cast<uint64_t>(rd->next_offset.value() - from.value());
  }
  return pr;
}

void FetchState::Attempt(bool final) {
  kafka::FetchResponse resp;
  auto pins = std::make_shared<std::vector<std::shared_ptr<const void>>>();
  size_t total = 0;
  bool error = false;
  size_t budget = req.max_bytes > 0 ? static_cast<size_t>(req.max_bytes) : 1;
  std::vector<std::pair<std::shared_ptr<Partition>, uint64_t>> watch;
  // What the answer carries, counted on its partitions once it goes: (partition, bytes, offsets).
  std::vector<std::tuple<std::shared_ptr<Partition>, uint64_t, uint64_t>> served;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    kafka::FetchTopicResponse tr;
    tr.name = std::string(t.name);
    for (const auto& fp : t.partitions) {
      if (!may_read[ti]) {
        kafka::FetchPartitionResponse refused;
        refused.index = fp.index;
        refused.error_code = ErrorCode::kTopicAuthorizationFailed;
        tr.partitions.push_back(std::move(refused));
        error = true;
        continue;
      }
      // KIP-74: the first batch goes out even when it is larger than max_bytes.
      PartRead pr = ReadPartition(*topics, tr.name, fp, total == 0 ? std::max<size_t>(budget, 1) : budget);
      total += pr.bytes;
      budget = budget > pr.bytes ? budget - pr.bytes : 0;
      if (pr.out.error_code != ErrorCode::kNone) error = true;
      if (pr.pin) pins->push_back(std::move(pr.pin));
      if (pr.partition) served.emplace_back(std::move(pr.partition), pr.bytes, pr.offsets);
      if (!final && pr.out.error_code == ErrorCode::kNone) {
        if (auto found = topics->Find(tr.name, PartitionId(fp.index)); found.ok()) {
          watch.emplace_back(*found, pr.generation);
        }
      }
      tr.partitions.push_back(std::move(pr.out));
    }
    resp.topics.push_back(std::move(tr));
  }
  const bool enough = total >= static_cast<size_t>(std::max(req.min_bytes, 0));
  if (final || enough || error || req.max_wait_ms <= 0 || std::chrono::steady_clock::now() >= deadline ||
      watch.empty()) {
    KafkaFrontDoor::Reply(call, resp, pins);
    for (const auto& [part, bytes, offsets] : served) {
      part->bytes_out.fetch_add(bytes, std::memory_order_relaxed);
      part->offsets_out.fetch_add(offsets, std::memory_order_relaxed);
    }
    return;
  }
  // Not enough yet: wait for a commit on any of the partitions, or the deadline.
  waiting = true;
  auto self = shared_from_this();
  for (auto& [p, seen] : watch) {
    MutexLock lock(p->mu);
    if (p->deleted() || static_cast<uint64_t>(p->log().HighWatermark().value()) != seen) {
      // Something changed while reading: read again now.
      waiting = false;
      break;
    }
    const uint64_t id = p->AddCommitWaiter([self] {
      asio::post(self->strand, [self] {
        if (!self->waiting) return;
        self->EndWait();
        self->Attempt(false);
      });
    });
    waiters.emplace_back(p, id);
  }
  if (!waiting) {
    EndWait();
    asio::post(strand, [self] { self->Attempt(false); });
    return;
  }
  timer.expires_at(deadline);
  timer.async_wait([self](const boost::system::error_code& ec) {
    if (ec || !self->waiting) return;
    self->EndWait();
    self->Attempt(true);
  });
}

void FetchState::EndWait() {
  waiting = false;
  timer.cancel();
  for (auto& [w, id] : waiters) {
    if (auto p = w.lock()) {
      MutexLock lock(p->mu);
      p->RemoveCommitWaiter(id);
    }
  }
  waiters.clear();
}

}  // namespace

void KafkaFrontDoor::Fetch(KafkaCall call, Reader& r) {
  auto st = std::make_shared<FetchState>(std::move(call), *io_);
  if (Status s = kafka::Decode(r, st->call.header.api_version, &st->req); !s.ok())
    return Malformed(st->call, s);
  if (st->req.session_id != 0 || st->req.session_epoch > 0) {
    // rdmq creates no fetch sessions (it answers session id 0, so clients send full fetches).
    kafka::FetchResponse resp;
    resp.error_code =
        st->req.session_id != 0 ? ErrorCode::kFetchSessionIdNotFound : ErrorCode::kInvalidFetchSessionEpoch;
    Reply(st->call, resp);
    return;
  }
  st->topics = d_.topics;
  for (const auto& t : st->req.topics)
    st->may_read.push_back(MayTopic(st->call, metadata::AclOperation::kRead, t.name));
  st->deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(st->req.max_wait_ms, 0));
  asio::dispatch(st->strand, [st] { st->Attempt(false); });
}

void KafkaFrontDoor::ListOffsets(const KafkaCall& call, Reader& r) {
  kafka::ListOffsetsRequest req;
  if (Status s = kafka::Decode(r, call.header.api_version, &req); !s.ok()) return Malformed(call, s);
  kafka::ListOffsetsResponse resp;
  for (const auto& t : req.topics) {
    kafka::ListOffsetsTopicResponse tr;
    tr.name = std::string(t.name);
    const bool may = MayTopic(call, metadata::AclOperation::kDescribe, t.name);
    for (const auto& lp : t.partitions) {
      kafka::ListOffsetsPartitionResponse out;
      out.index = lp.index;
      if (!may) {
        out.error_code = ErrorCode::kTopicAuthorizationFailed;
        tr.partitions.push_back(out);
        continue;
      }
      Status s = d_.topics->WithPartition(tr.name, PartitionId(lp.index), [&](Partition& p) REQUIRES(p.mu) {
        storage::PartitionLog& log = p.log();
        if (lp.timestamp == kafka::kListOffsetsLatest) {
          out.offset = log.HighWatermark().value();
        } else if (lp.timestamp == kafka::kListOffsetsEarliest) {
          out.offset = log.LogStartOffset().value();
        } else if (lp.timestamp < 0) {
          return Status(protocol::WireError::kInvalidRequest, "timestamp " + std::to_string(lp.timestamp));
        } else {
          RDMQ_ASSIGN_OR_RETURN(Offset o, log.OffsetForTimestamp(TimestampMs(lp.timestamp)));
          out.offset = o == kNoOffset ? -1 : o.value();
          out.timestamp = o == kNoOffset ? -1 : lp.timestamp;
        }
        return Status::Ok();
      });
      out.error_code = ToKafkaError(s);
      tr.partitions.push_back(out);
    }
    resp.topics.push_back(std::move(tr));
  }
  Reply(call, resp);
}

}  // namespace rdmq::broker::internal
