// The broker's operators' endpoint (listen.http): /metrics in Prometheus text format, /healthz
// and /readyz. docs/operations.md lists every family. A scrape reads what the broker keeps
// anyway (counters, each partition's state under its lock, the RPC server's and the offset
// store's figures); nothing here adds work to the data path.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "broker_impl.h"
#include "rdmq/metrics/exposition.h"
#include "rdmq/metrics/process.h"

namespace rdmq::broker::internal {

namespace {

using metrics::Exposition;
using metrics::Type;

constexpr const char* kText = "text/plain; charset=utf-8";

// One partition's figures, read under its lock.
struct PartitionRow {
  std::string topic;
  std::string partition;
  double log_start = 0;
  double high_watermark = 0;
  double size_bytes = 0;
  double records_in = 0;
  double bytes_in = 0;
  double bytes_out = 0;
  double offsets_out = 0;
  double exclusive_leases = 0;
  double shared_leases = 0;
};

PartitionRow ReadRow(Partition& p) {
  PartitionRow r;
  r.topic = p.topic_name();
  r.partition = std::to_string(p.index().value());
  r.bytes_out = static_cast<double>(p.bytes_out.load(std::memory_order_relaxed));
  r.offsets_out = static_cast<double>(p.offsets_out.load(std::memory_order_relaxed));
  MutexLock lock(p.mu);
  if (p.deleted()) return r;
  storage::PartitionLog& log = p.log();
  const Offset hw = log.HighWatermark();
  r.log_start = static_cast<double>(log.LogStartOffset().value());
  r.high_watermark = static_cast<double>(hw.value());
  const int64_t in = hw.value() - p.opened_high_watermark().value();
  r.records_in = static_cast<double>(in > 0 ? in : 0);
  r.bytes_in = static_cast<double>(p.bytes_in());
  for (const storage::SegmentInfo& s : log.Segments()) {
    const Position end = s.base_offset == p.active().base ? p.active().committed : s.committed;
    r.size_bytes += static_cast<double>(end.value());
  }
  r.exclusive_leases = p.exclusive() ? 1 : 0;
  r.shared_leases = static_cast<double>(p.shared_count());
  return r;
}

void Counter(Exposition& e, const char* name, const char* help, uint64_t v) {
  e.Family(name, Type::kCounter, help);
  e.Sample({}, static_cast<double>(v));
}

void Gauge(Exposition& e, const char* name, const char* help, double v) {
  e.Family(name, Type::kGauge, help);
  e.Sample({}, v);
}

// One family with a sample per partition.
template <class Get>
void PerPartition(Exposition& e, const std::vector<PartitionRow>& rows, const char* name, Type type,
                  const char* help, Get get) {
  e.Family(name, type, help);
  for (const PartitionRow& r : rows) e.Sample({{"topic", r.topic}, {"partition", r.partition}}, get(r));
}

}  // namespace

metrics::HttpResponse BrokerImpl::ServeHttp(const metrics::HttpRequest& r) const {
  const Phase phase = phase_.load(std::memory_order_acquire);
  if (r.path == "/healthz") return {200, kText, "ok\n"};
  if (r.path == "/readyz") {
    if (phase == Phase::kServing) return {200, kText, "ready\n"};
    return {503, kText, phase == Phase::kStarting ? "not ready: recovering\n" : "not ready: shutting down\n"};
  }
  if (r.path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", Scrape(phase)};
  if (r.path == "/") return {200, kText, "rdmq broker: /metrics (Prometheus), /healthz, /readyz\n"};
  return {404, kText, "no such endpoint: " + r.path + " (try /metrics, /healthz, /readyz)\n"};
}

std::string BrokerImpl::Scrape(Phase phase) const {
  Exposition e;
  e.Family("rdmq_broker_info", Type::kGauge, "The broker's identity (always 1).");
  const std::string id = std::to_string(cfg_.broker_id);
  e.Sample({{"broker_id", id}, {"fabric", cfg_.fabric}}, 1);
  Gauge(e, "rdmq_broker_ready", "1 once the broker recovered and serves, 0 while it starts.",
        phase == Phase::kServing ? 1 : 0);
  if (phase == Phase::kServing) {
    Counter(e, "rdmq_commits_total", "Ranges committed (data plane, Commit RPC and Kafka Produce).",
            n_.commits.load());
    Counter(e, "rdmq_commit_errors_total", "Commits refused.", n_.commit_errors.load());
    e.Family("rdmq_commit_groups_total", Type::kCounter,
             "Group commits: several ranges of one lease taken in one poll and committed as one range, "
             "by outcome (committed; split: refused as a group, then committed range by range up to the "
             "refused one).");
    e.Sample({{"outcome", "committed"}}, static_cast<double>(n_.commit_groups.load()));
    e.Sample({{"outcome", "split"}}, static_cast<double>(n_.commit_groups_split.load()));
    e.Family("rdmq_spare_segments_total", Type::kCounter,
             "Next segments made ahead of their roll (log.segment.preallocate), by outcome (made; failed: "
             "the roll made the segment itself).");
    e.Sample({{"outcome", "made"}}, static_cast<double>(n_.spare_segments.load()));
    e.Sample({{"outcome", "failed"}}, static_cast<double>(n_.spare_segments_failed.load()));
    Counter(e, "rdmq_acks_total", "Ack blocks written to producers.", n_.acks.load());
    Counter(e, "rdmq_duplicate_batches_total", "Idempotent batches dropped as duplicates.",
            n_.duplicates.load());
    Counter(e, "rdmq_leases_granted_total", "Producer leases granted.", n_.leases_granted.load());
    Counter(e, "rdmq_leases_expired_total", "Producer leases that ended unrenewed.",
            n_.leases_expired.load());
    Counter(e, "rdmq_leases_idle_released_total", "Leases released after lease.idle.ms without a commit.",
            n_.leases_idle.load());
    Counter(e, "rdmq_notifications_total", "Watch notifications sent to consumers.", n_.notifications.load());
    Gauge(e, "rdmq_sessions", "Clients connected.", static_cast<double>(sessions_.size()));
    Gauge(e, "rdmq_topics", "Topics.", static_cast<double>(topics_->topic_count()));

    std::vector<PartitionRow> rows;
    std::map<std::pair<std::string, std::string>, double> ends;  // (topic, partition) → high watermark
    for (const auto& p : topics_->AllPartitions()) {
      rows.push_back(ReadRow(*p));
      ends[{rows.back().topic, rows.back().partition}] = rows.back().high_watermark;
    }
    Gauge(e, "rdmq_partitions", "Partitions open.", static_cast<double>(rows.size()));
    e.Family("rdmq_leases", Type::kGauge, "Producer leases held now, by mode.");
    double excl = 0, shared = 0;
    for (const auto& r : rows) {
      excl += r.exclusive_leases;
      shared += r.shared_leases;
    }
    e.Sample({{"mode", "exclusive"}}, excl);
    e.Sample({{"mode", "shared"}}, shared);
    PerPartition(e, rows, "rdmq_partition_log_start_offset", Type::kGauge, "The first offset still stored.",
                 [](const PartitionRow& r) { return r.log_start; });
    PerPartition(e, rows, "rdmq_partition_high_watermark", Type::kGauge,
                 "The next offset to be assigned: every offset below it is committed and readable (the log "
                 "end; one broker has no replicas, so the two are the same).",
                 [](const PartitionRow& r) { return r.high_watermark; });
    PerPartition(e, rows, "rdmq_partition_size_bytes", Type::kGauge, "Committed bytes stored in the log.",
                 [](const PartitionRow& r) { return r.size_bytes; });
    PerPartition(e, rows, "rdmq_partition_records_in_total", Type::kCounter,
                 "Offsets assigned (records appended) since the broker opened the partition.",
                 [](const PartitionRow& r) { return r.records_in; });
    PerPartition(e, rows, "rdmq_partition_bytes_in_total", Type::kCounter,
                 "Batch bytes committed since the broker opened the partition.",
                 [](const PartitionRow& r) { return r.bytes_in; });
    PerPartition(e, rows, "rdmq_partition_bytes_out_total", Type::kCounter,
                 "Batch bytes the Kafka listener served to fetchers (rdmq consumers READ the log "
                 "one-sided: the broker does not see those reads).",
                 [](const PartitionRow& r) { return r.bytes_out; });
    PerPartition(e, rows, "rdmq_partition_records_out_total", Type::kCounter,
                 "Offsets the Kafka listener's fetch answers carried past the fetch offset.",
                 [](const PartitionRow& r) { return r.offsets_out; });

    e.Family("rdmq_commit_duration_seconds", Type::kHistogram,
             "Broker time per commit: validation, the log's commit (its persist on durable topics) and "
             "the ack, by path (data: a one-sided producer's commit, or a group of them; rpc: a shared "
             "producer's Commit).");
    e.Histogram({{"path", "data"}}, n_.data_commit_ns.Snapshot(1e-9));
    e.Histogram({{"path", "rpc"}}, n_.rpc_commit_ns.Snapshot(1e-9));
    e.Family("rdmq_kafka_produce_duration_seconds", Type::kHistogram,
             "Kafka Produce requests (acks 1 or all): from the decoded request to the reply queued.");
    e.Histogram({}, n_.kafka_produce_ns.Snapshot(1e-9));

    e.Family(
        "rdmq_fabric_completions_total", Type::kCounter,
        "Data-plane completions the broker polled, by queue (recv: commits; send: acks, notifications).");
    e.Sample({{"queue", "recv"}}, static_cast<double>(n_.data_receives.load()));
    e.Sample({{"queue", "send"}}, static_cast<double>(n_.data_sends.load()));
    Counter(e, "rdmq_fabric_errors_total", "Data-plane completions with an error (a peer gone included).",
            n_.data_errors.load());
    if (rpc_) {
      const rpc::Server::Stats s = rpc_->stats();
      Counter(e, "rdmq_rpc_requests_total", "RPC requests dispatched.", s.requests);
      Counter(e, "rdmq_rpc_messages_total", "RPC request messages (a message coalesces requests).",
              s.messages);
      e.Family("rdmq_rpc_credit_renewals_total", Type::kCounter, "RPC credit renewals, by result.");
      e.Sample({{"result", "granted"}}, static_cast<double>(s.renewals_granted));
      e.Sample({{"result", "refused"}}, static_cast<double>(s.renewals_refused));
      Counter(e, "rdmq_rpc_connections_accepted_total", "RPC connections accepted.", s.connections_accepted);
      Counter(e, "rdmq_rpc_connections_closed_total", "RPC connections closed.", s.connections_closed);
      Counter(e, "rdmq_rpc_protocol_errors_total", "RPC connections closed for breaking the protocol.",
              s.protocol_errors);
      Counter(e, "rdmq_rpc_unknown_handler_total", "RPC requests for a handler that does not exist.",
              s.unknown_handler);
    }

    // Consumer groups: members, and per committed partition the offset and the lag behind the end.
    e.Family("rdmq_group_members", Type::kGauge, "Members of each consumer group.");
    for (const GroupOverview& g : groups_->Overview()) e.Sample({{"group", g.group}}, g.members);
    std::vector<std::tuple<std::string, std::string, std::string, double, double>> committed;
    for (const std::string& g : offsets_->Groups()) {
      for (const auto& [key, c] : offsets_->FetchGroup(g)) {
        const std::string part = std::to_string(key.second);
        const auto end = ends.find({key.first, part});
        if (end == ends.end()) continue;  // a partition that no longer exists
        const double lag = end->second - static_cast<double>(c.offset);
        committed.emplace_back(g, key.first, part, static_cast<double>(c.offset), lag > 0 ? lag : 0);
      }
    }
    e.Family("rdmq_group_committed_offset", Type::kGauge,
             "The offset each group committed (its next record).");
    for (const auto& [g, t, p, off, lag] : committed)
      e.Sample({{"group", g}, {"topic", t}, {"partition", p}}, off);
    e.Family("rdmq_group_lag", Type::kGauge,
             "Records between a group's committed offset and the high watermark.");
    for (const auto& [g, t, p, off, lag] : committed)
      e.Sample({{"group", g}, {"topic", t}, {"partition", p}}, lag);
  }
  metrics::WriteProcessMetrics(e);
  return e.Take();
}

}  // namespace rdmq::broker::internal
