#include "rdmq/client/admin.h"

#include <charconv>
#include <chrono>
#include <thread>

#include "rdmq/client/backoff.h"
#include "rdmq/client/connection.h"

namespace rdmq::client {
namespace {

using protocol::Api;

std::vector<protocol::ConfigEntry> ToEntries(
    const std::vector<std::pair<std::string, std::string>>& configs) {
  std::vector<protocol::ConfigEntry> out;
  out.reserve(configs.size());
  for (const auto& [k, v] : configs) out.push_back({k, v});
  return out;
}

TopicDescription FromInfo(const protocol::TopicInfo& t) {
  TopicDescription d;
  d.name = t.name;
  d.id = t.id.value();
  d.created_ms = t.created_ms.value();
  for (const auto& e : t.configs) d.configs.emplace_back(e.key, e.value);
  return d;
}

// A call that failed because the broker was unreachable (the connection broke, or a new one could
// not be made yet) is retried until its request timeout.
bool BrokerAway(const Status& s) { return s.is(Errc::kUnavailable); }

class AdminClientImpl final : public AdminClient {
 public:
  explicit AdminClientImpl(std::unique_ptr<Connection> c) : conn_(std::move(c)) {}

  Result<TopicDescription> CreateTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) override {
    protocol::CreateTopicRequest req{name, ToEntries(configs)};
    RDMQ_ASSIGN_OR_RETURN(auto resp, (Call<protocol::TopicResponse>(Api::kCreateTopic, req)));
    return FromInfo(resp.topic);
  }

  Status DeleteTopic(const std::string& name) override {
    return Call<protocol::Empty>(Api::kDeleteTopic, protocol::TopicNameRequest{name}).status();
  }

  Result<TopicDescription> DescribeTopic(const std::string& name) override {
    RDMQ_ASSIGN_OR_RETURN(auto resp, (Call<protocol::DescribeTopicResponse>(
                                         Api::kDescribeTopic, protocol::TopicNameRequest{name})));
    TopicDescription d = FromInfo(resp.topic);
    for (const auto& p : resp.partitions) {
      PartitionDescription pd;
      pd.partition = p.partition.value();
      pd.log_start_offset = p.log_start_offset.value();
      pd.high_watermark = p.high_watermark.value();
      pd.segments = p.segments;
      pd.bytes = p.bytes;
      pd.active_segment_base = p.active_segment_base.value();
      pd.exclusive_lease = p.exclusive_lease != 0;
      d.partitions.push_back(pd);
    }
    return d;
  }

  Result<std::vector<TopicDescription>> ListTopics() override {
    RDMQ_ASSIGN_OR_RETURN(auto resp,
                          (Call<protocol::ListTopicsResponse>(Api::kListTopics, protocol::Empty{})));
    std::vector<TopicDescription> out;
    for (const auto& t : resp.topics) out.push_back(FromInfo(t));
    return out;
  }

  Result<TopicDescription> AlterTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) override {
    protocol::AlterTopicRequest req{name, ToEntries(configs)};
    RDMQ_ASSIGN_OR_RETURN(auto resp, (Call<protocol::TopicResponse>(Api::kAlterTopic, req)));
    return FromInfo(resp.topic);
  }

 private:
  // One admin RPC, retried with backoff (retry.backoff.ms, doubling up to
  // reconnect.backoff.max.ms) while the broker is away, reconnecting before each retry, until
  // request.timeout.ms passes. Errors the broker returns are not retried.
  template <class Resp, class Req>
  Result<Resp> Call(protocol::Api api, const Req& req) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + conn_->options().request_timeout;
    Backoff backoff(conn_->options().retry_backoff, conn_->options().reconnect_backoff_max);
    while (true) {
      Status s;
      if (conn_->connected()) {
        auto r = conn_->Call<Resp>(api, req);
        if (r.ok() || !BrokerAway(r.status())) return r;
        s = r.status();
      } else {
        s = conn_->Reconnect();
        if (s.ok()) continue;
        if (!BrokerAway(s)) return s;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        return s.WithContext("the broker stayed unreachable for request.timeout.ms=" +
                             std::to_string(conn_->options().request_timeout.count()));
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(backoff.Next(), deadline - now));
    }
  }

  std::unique_ptr<Connection> conn_;
};

}  // namespace

int32_t TopicDescription::partition_count() const {
  for (const auto& [k, v] : configs) {
    if (k == "partitions") {
      int32_t n = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      return ec == std::errc() && ptr == v.data() + v.size() ? n : 0;
    }
  }
  return static_cast<int32_t>(partitions.size());
}

Result<std::unique_ptr<AdminClient>> AdminClient::Connect(const ClientOptions& options) {
  ConnectionOptions co;
  co.data_endpoint = false;
  RDMQ_ASSIGN_OR_RETURN(auto conn, Connection::Open(options, co));
  return std::unique_ptr<AdminClient>(new AdminClientImpl(std::move(conn)));
}

}  // namespace rdmq::client
