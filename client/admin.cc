#include "rdmq/client/admin.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "rdmq/client/backoff.h"
#include "rdmq/client/connection.h"
#include "rdmq/protocol/acl_messages.h"
#include "rdmq/protocol/group_messages.h"
#include "rdmq/protocol/user_messages.h"

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

protocol::UserRequest ToRequest(const UserCredentials& u) {
  protocol::UserRequest r;
  r.name = u.name;
  for (const auto& s : u.secrets) {
    r.secrets.push_back({s.mechanism, protocol::Blob{s.salt}, s.iterations, protocol::Blob{s.stored_key},
                         protocol::Blob{s.server_key}});
  }
  return r;
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
      pd.leader = p.leader;
      pd.leader_epoch = p.leader_epoch;
      pd.replicas = p.replicas;
      pd.isr = p.isr;
      pd.local = p.local != 0;
      d.partitions.push_back(pd);
    }
    return d;
  }

  Result<ClusterDescription> DescribeCluster() override {
    RDMQ_ASSIGN_OR_RETURN(
        auto r, (Call<protocol::DescribeClusterResponse>(Api::kDescribeCluster, protocol::Empty{})));
    ClusterDescription c;
    c.clustered = r.clustered != 0;
    c.controller = r.controller;
    c.controller_epoch = r.controller_epoch;
    c.this_broker = r.this_broker;
    c.zookeeper = std::move(r.zookeeper);
    for (auto& b : r.brokers)
      c.brokers.push_back({b.id, std::move(b.control), std::move(b.data), std::move(b.kafka)});
    return c;
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

  Status ReassignPartition(const std::string& topic, int32_t partition,
                           const std::vector<int32_t>& replicas) override {
    protocol::ReassignPartitionRequest req{topic, PartitionId(partition), replicas};
    return Call<protocol::Empty>(Api::kReassignPartition, req).status();
  }

  // --- Consumer groups -----------------------------------------------------------------------

  // In a cluster each broker lists the groups it coordinates: every live broker is asked.
  Result<std::vector<GroupListing>> ListGroups() override {
    RDMQ_ASSIGN_OR_RETURN(auto resp,
                          (Call<protocol::ListGroupsResponse>(Api::kListGroups, protocol::Empty{})));
    // A user that may not describe the cluster gets this broker's list (all of it on a broker on
    // its own).
    auto described = Call<protocol::DescribeClusterResponse>(Api::kDescribeCluster, protocol::Empty{});
    if (!described.ok() && !described.status().is(Errc::kPermissionDenied)) return described.status();
    protocol::DescribeClusterResponse cluster;
    if (described.ok()) cluster = std::move(*described);
    for (const auto& b : cluster.brokers) {
      if (cluster.clustered == 0 || b.id == cluster.this_broker) continue;
      auto there = CallAt<protocol::ListGroupsResponse>(b.control, Api::kListGroups, protocol::Empty{});
      if (!there.ok())
        return there.status().WithContext("listing the groups of broker " + std::to_string(b.id));
      resp.groups.insert(resp.groups.end(), there->groups.begin(), there->groups.end());
    }
    std::vector<GroupListing> out;
    for (const auto& g : resp.groups) out.push_back({g.group, g.state, g.members, g.type});
    std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.group < y.group; });
    return out;
  }

  Result<GroupDescription> DescribeGroup(const std::string& group) override {
    RDMQ_ASSIGN_OR_RETURN(auto resp, (AtCoordinator<protocol::DescribeGroupResponse>(
                                         group, Api::kDescribeGroup, protocol::GroupRequest{group})));
    auto tps = [](const std::vector<protocol::TopicPartitionRef>& refs) {
      std::vector<TopicPartition> out;
      out.reserve(refs.size());
      for (const auto& r : refs) out.push_back({r.topic, r.partition.value()});
      std::sort(out.begin(), out.end());
      return out;
    };
    GroupDescription d;
    d.group = resp.group;
    d.state = resp.state;
    d.group_epoch = resp.group_epoch;
    d.assignor = resp.assignor;
    d.type = resp.type;
    std::map<TopicPartition, GroupPartitionDescription> parts;
    auto part = [&](const std::string& topic, int32_t partition) -> GroupPartitionDescription& {
      auto& p = parts[{topic, partition}];
      p.topic = topic;
      p.partition = partition;
      return p;
    };
    for (const auto& e : resp.offsets) {
      auto& p = part(e.topic, e.partition.value());
      p.committed_offset = e.offset.value();
      p.metadata = e.metadata;
      p.commit_ms = e.commit_ms.value();
    }
    for (const auto& m : resp.members) {
      GroupMemberDescription md{m.member_id, m.instance_id, m.client_id,       m.member_epoch,
                                m.topics,    m.topic_regex, tps(m.assignment), tps(m.target)};
      for (const auto& tp : md.assignment) part(tp.topic, tp.partition).owner = m.member_id;
      d.members.push_back(std::move(md));
    }
    std::set<std::string> topics;
    for (const auto& [tp, p] : parts) topics.insert(tp.topic);
    for (const auto& topic : topics) {
      auto t = DescribeTopic(topic);
      if (!t.ok()) {
        if (t.status().is(Errc::kNotFound)) continue;  // deleted meanwhile: ends unknown
        return t.status();
      }
      for (const auto& pd : t->partitions) {
        auto it = parts.find({topic, pd.partition});
        if (it == parts.end()) continue;
        it->second.log_start_offset = pd.log_start_offset;
        it->second.log_end_offset = pd.high_watermark;
      }
    }
    for (auto& [tp, p] : parts) {
      if (p.committed_offset >= 0 && p.log_end_offset >= 0)
        p.lag = std::max<int64_t>(0, p.log_end_offset - p.committed_offset);
      d.partitions.push_back(std::move(p));
    }
    return d;
  }

  Status DeleteGroup(const std::string& group) override {
    return AtCoordinator<protocol::Empty>(group, Api::kDeleteGroup, protocol::GroupRequest{group}).status();
  }

  Result<std::map<TopicPartition, CommittedOffset>> ListGroupOffsets(
      const std::string& group, const std::vector<TopicPartition>& partitions) override {
    protocol::OffsetFetchRequest req{group, {}};
    for (const auto& tp : partitions) req.partitions.push_back({tp.topic, PartitionId(tp.partition)});
    RDMQ_ASSIGN_OR_RETURN(auto resp,
                          (AtCoordinator<protocol::OffsetFetchResponse>(group, Api::kOffsetFetch, req)));
    std::map<TopicPartition, CommittedOffset> out;
    for (const auto& e : resp.offsets) {
      const bool none = e.offset.value() < 0;
      out[{e.topic, e.partition.value()}] = {none ? -1 : e.offset.value(), e.metadata,
                                             none ? -1 : e.commit_ms.value()};
    }
    return out;
  }

  Status CommitGroupOffsets(const std::string& group,
                            const std::map<TopicPartition, int64_t>& offsets) override {
    protocol::OffsetCommitRequest req;
    req.group = group;
    req.member_id.clear();
    req.member_epoch = protocol::kSimpleCommitEpoch;
    for (const auto& [tp, offset] : offsets) {
      if (offset < 0) {
        return Status(Errc::kInvalidArgument, "commit of offset " + std::to_string(offset) + " for " +
                                                  tp.topic + "/" + std::to_string(tp.partition));
      }
      req.offsets.push_back({tp.topic, PartitionId(tp.partition), Offset(offset), -1, "", TimestampMs(0)});
    }
    return AtCoordinator<protocol::Empty>(group, Api::kOffsetCommit, req).status();
  }

  Result<int64_t> OffsetForTimestamp(const TopicPartition& tp, int64_t timestamp_ms) override {
    if (timestamp_ms < 0) {
      return Status(Errc::kInvalidArgument,
                    "OffsetForTimestamp with a negative timestamp " + std::to_string(timestamp_ms));
    }
    protocol::ListOffsetsRequest req{tp.topic, PartitionId(tp.partition), timestamp_ms, Offset(0)};
    RDMQ_ASSIGN_OR_RETURN(auto resp, (Call<protocol::ListOffsetsResponse>(Api::kListOffsets, req)));
    return resp.offset.value() < 0 ? int64_t{-1} : resp.offset.value();
  }

  // --- SASL users ----------------------------------------------------------------------------

  Status CreateUser(const UserCredentials& user) override {
    return Call<protocol::Empty>(Api::kCreateUser, ToRequest(user)).status();
  }

  Status AlterUser(const UserCredentials& user) override {
    return Call<protocol::Empty>(Api::kAlterUser, ToRequest(user)).status();
  }

  Status DeleteUser(const std::string& name) override {
    return Call<protocol::Empty>(Api::kDeleteUser, protocol::UserNameRequest{name}).status();
  }

  Result<std::vector<UserListing>> ListUsers() override {
    RDMQ_ASSIGN_OR_RETURN(auto resp, (Call<protocol::ListUsersResponse>(Api::kListUsers, protocol::Empty{})));
    std::vector<UserListing> out;
    out.reserve(resp.users.size());
    for (auto& u : resp.users) {
      std::sort(u.mechanisms.begin(), u.mechanisms.end());
      out.push_back({std::move(u.name), std::move(u.mechanisms)});
    }
    std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
    return out;
  }

  Result<uint32_t> CreateAcls(const std::vector<AclBinding>& acls) override {
    RDMQ_ASSIGN_OR_RETURN(auto r, (Call<protocol::AclsResponse>(Api::kCreateAcls, ToWire(acls))));
    return r.changed;
  }
  Result<uint32_t> DeleteAcls(const std::vector<AclBinding>& acls) override {
    RDMQ_ASSIGN_OR_RETURN(auto r, (Call<protocol::AclsResponse>(Api::kDeleteAcls, ToWire(acls))));
    return r.changed;
  }
  Result<std::vector<AclBinding>> ListAcls() override {
    RDMQ_ASSIGN_OR_RETURN(auto r, (Call<protocol::ListAclsResponse>(Api::kListAcls, protocol::Empty{})));
    std::vector<AclBinding> out;
    out.reserve(r.acls.size());
    for (auto& e : r.acls) {
      out.push_back({std::move(e.principal), std::move(e.permission), std::move(e.operation),
                     std::move(e.resource_type), std::move(e.pattern_type), std::move(e.resource_name)});
    }
    return out;
  }

 private:
  static protocol::AclsRequest ToWire(const std::vector<AclBinding>& acls) {
    protocol::AclsRequest req;
    for (const auto& b : acls) {
      req.acls.push_back(
          {b.principal, b.permission, b.operation, b.resource_type, b.pattern_type, b.resource_name});
    }
    return req;
  }

  // One RPC at the broker whose control address is `address`, over a connection of its own.
  template <class Resp, class Req>
  Result<Resp> CallAt(const std::string& address, protocol::Api api, const Req& req) {
    ClientOptions at = conn_->options();
    at.bootstrap = address;
    ConnectionOptions co;
    co.data_endpoint = false;
    RDMQ_ASSIGN_OR_RETURN(auto there, Connection::Open(at, co));
    return there->Call<Resp>(api, req);
  }
  // One RPC at the broker that coordinates `group` (FindCoordinator): this one, or another in a
  // cluster. While a broker joins or leaves, brokers may briefly disagree on the coordinator:
  // NOT_COORDINATOR is asked again with backoff, until the request timeout.
  template <class Resp, class Req>
  Result<Resp> AtCoordinator(const std::string& group, protocol::Api api, const Req& req) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + conn_->options().request_timeout;
    Backoff backoff(conn_->options().retry_backoff, conn_->options().reconnect_backoff_max);
    for (;;) {
      RDMQ_ASSIGN_OR_RETURN(auto c, (Call<protocol::FindCoordinatorResponse>(Api::kFindCoordinator,
                                                                             protocol::GroupRequest{group})));
      Result<Resp> r = c.control.empty() ? Call<Resp>(api, req) : CallAt<Resp>(c.control, api, req);
      if (r.ok()) return r;
      if (!r.status().is(protocol::WireError::kNotCoordinator) || Clock::now() >= deadline) {
        if (c.control.empty() || !r.status().is(Errc::kUnavailable)) return r;
        return r.status().WithContext("group '" + group + "' coordinator, broker " +
                                      std::to_string(c.broker));
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(backoff.Next(), deadline - Clock::now()));
    }
  }

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

Result<TopicDescription> AdminClient::DescribeTopicAtLeaders(const std::string& name,
                                                             const ClientOptions& options,
                                                             const std::vector<int32_t>& only) {
  RDMQ_ASSIGN_OR_RETURN(TopicDescription d, DescribeTopic(name));
  std::map<int32_t, std::vector<size_t>> elsewhere;  // leader -> its partitions, by index
  for (size_t i = 0; i < d.partitions.size(); ++i) {
    const PartitionDescription& p = d.partitions[i];
    const bool wanted = only.empty() || std::find(only.begin(), only.end(), p.partition) != only.end();
    if (wanted && !p.local && p.leader >= 0) elsewhere[p.leader].push_back(i);
  }
  if (elsewhere.empty()) return d;
  RDMQ_ASSIGN_OR_RETURN(ClusterDescription cluster, DescribeCluster());
  for (const auto& entry : elsewhere) {
    const int32_t leader = entry.first;
    auto b = std::find_if(cluster.brokers.begin(), cluster.brokers.end(),
                          [leader](const BrokerDescription& e) { return e.id == leader; });
    if (b == cluster.brokers.end()) continue;  // gone since: its partitions stay not local
    ClientOptions at = options;
    at.bootstrap = b->control;
    auto admin = Connect(at);
    if (!admin.ok())
      return admin.status().WithContext("broker " + std::to_string(leader) + ", a leader of " + name);
    RDMQ_ASSIGN_OR_RETURN(TopicDescription there, (*admin)->DescribeTopic(name));
    for (size_t i : entry.second) {
      const int32_t partition = d.partitions[i].partition;
      for (const PartitionDescription& p : there.partitions) {
        if (p.partition == partition && p.local) d.partitions[i] = p;
      }
    }
  }
  return d;
}

Result<std::unique_ptr<AdminClient>> AdminClient::Connect(const ClientOptions& options) {
  ConnectionOptions co;
  co.data_endpoint = false;
  RDMQ_ASSIGN_OR_RETURN(auto conn, Connection::Open(options, co));
  return std::unique_ptr<AdminClient>(new AdminClientImpl(std::move(conn)));
}

}  // namespace rdmq::client
