#include "rdmq/client/admin.h"

#include <charconv>

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

class AdminClientImpl final : public AdminClient {
 public:
  explicit AdminClientImpl(std::unique_ptr<Connection> c) : conn_(std::move(c)) {}

  Result<TopicDescription> CreateTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) override {
    protocol::CreateTopicRequest req{name, ToEntries(configs)};
    RDMQ_ASSIGN_OR_RETURN(auto resp, (conn_->Call<protocol::TopicResponse>(Api::kCreateTopic, req)));
    return FromInfo(resp.topic);
  }

  Status DeleteTopic(const std::string& name) override {
    return conn_->Call<protocol::Empty>(Api::kDeleteTopic, protocol::TopicNameRequest{name}).status();
  }

  Result<TopicDescription> DescribeTopic(const std::string& name) override {
    RDMQ_ASSIGN_OR_RETURN(auto resp, (conn_->Call<protocol::DescribeTopicResponse>(
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
                          (conn_->Call<protocol::ListTopicsResponse>(Api::kListTopics, protocol::Empty{})));
    std::vector<TopicDescription> out;
    for (const auto& t : resp.topics) out.push_back(FromInfo(t));
    return out;
  }

  Result<TopicDescription> AlterTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) override {
    protocol::AlterTopicRequest req{name, ToEntries(configs)};
    RDMQ_ASSIGN_OR_RETURN(auto resp, (conn_->Call<protocol::TopicResponse>(Api::kAlterTopic, req)));
    return FromInfo(resp.topic);
  }

 private:
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
