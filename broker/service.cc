// The metadata service: one handler per RPC of docs/protocol.md section 3.
#include "broker_impl.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/log.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

namespace {

template <class Req>
bool DecodeRequest(Api api, std::span<const std::byte> bytes, Req* out, rpc::ResponseBuffer& resp) {
  auto r = protocol::Decode<Req>(bytes);
  if (!r.ok()) {
    resp.Append(protocol::EncodeError(
        WireError::kInvalidRequest,
        "malformed " + std::string(protocol::ApiName(api)) + " request: " + r.status().ToString()));
    return false;
  }
  *out = std::move(*r);
  return true;
}

template <class M>
void Ok(rpc::ResponseBuffer& resp, const M& body) {
  resp.Append(protocol::EncodeOk(body));
}

void Error(rpc::ResponseBuffer& resp, const Status& s) { resp.Append(protocol::EncodeError(s)); }

// Metadata store errors onto the wire's codes.
Status FromMeta(const Status& s) {
  if (s.ok()) return s;
  std::string msg(s.context());
  if (msg.empty()) msg = s.code().message();
  if (s.is(metadata::MetadataErrc::kBadTopicName)) return Status(WireError::kInvalidTopicName, msg);
  if (s.is(metadata::MetadataErrc::kBadConfig) || s.is(metadata::MetadataErrc::kUnknownConfig)) {
    return Status(WireError::kInvalidConfig, msg);
  }
  if (s.is(metadata::MetadataErrc::kTopicExists)) return Status(WireError::kTopicExists, msg);
  if (s.is(metadata::MetadataErrc::kNoSuchTopic)) return Status(WireError::kUnknownTopic, msg);
  return Status(WireError::kStorageError, "metadata store: " + s.ToString());
}

protocol::TopicInfo ToWire(const metadata::TopicInfo& t) {
  protocol::TopicInfo w;
  w.name = t.name;
  w.id = t.id.value();
  w.created_ms = t.created_ms;
  for (auto& [k, v] : metadata::ConfigEntries(t.config)) w.configs.push_back({k, v});
  return w;
}

Result<metadata::TopicConfig> ApplyConfigs(metadata::TopicConfig c,
                                           const std::vector<protocol::ConfigEntry>& e) {
  for (const auto& [k, v] : e) {
    if (Status s = metadata::SetConfig(&c, k, v); !s.ok()) {
      std::string msg(s.context());
      if (msg.empty()) msg = s.code().message();
      return Status(WireError::kInvalidConfig, k + "=" + v + ": " + msg);
    }
  }
  if (Status s = metadata::ValidateConfig(c); !s.ok()) {
    return Status(WireError::kInvalidConfig,
                  std::string(s.context().empty() ? s.code().message() : s.context()));
  }
  return c;
}

}  // namespace

Status BrokerImpl::RegisterHandlers() {
  auto reg = [this](Api api, rpc::RunOn where, auto fn) {
    return rpc_->RegisterHandler(
        static_cast<uint16_t>(api),
        [this, fn](const rpc::RequestContext& ctx, std::span<const std::byte> req,
                   rpc::ResponseBuffer& resp) {
          fn(this, ctx, req, resp);
          return Status::Ok();
        },
        where);
  };
  using Ctx = const rpc::RequestContext&;
  using Req = std::span<const std::byte>;
  using Resp = rpc::ResponseBuffer&;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  constexpr auto kInline = rpc::RunOn::kDispatcher;
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kHello, kInline, [](BrokerImpl* b, Ctx c, Req r, Resp o) { b->HandleHello(c, r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kCreateTopic, kPool, [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleCreateTopic(r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kDeleteTopic, kPool, [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleDeleteTopic(r, o); }));
  RDMQ_RETURN_IF_ERROR(reg(Api::kDescribeTopic, kPool,
                           [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleDescribeTopic(r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kListTopics, kPool, [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleListTopics(r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kAlterTopic, kPool, [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleAlterTopic(r, o); }));
  RDMQ_RETURN_IF_ERROR(reg(Api::kInitProducerId, kPool,
                           [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleInitProducerId(r, o); }));
  RDMQ_RETURN_IF_ERROR(reg(Api::kOpenProduce, kPool,
                           [](BrokerImpl* b, Ctx c, Req r, Resp o) { b->HandleOpenProduce(c, r, o); }));
  RDMQ_RETURN_IF_ERROR(reg(Api::kRenewLease, kPool,
                           [](BrokerImpl* b, Ctx c, Req r, Resp o) { b->HandleRenewLease(c, r, o); }));
  RDMQ_RETURN_IF_ERROR(reg(Api::kReleaseLease, kPool,
                           [](BrokerImpl* b, Ctx c, Req r, Resp o) { b->HandleReleaseLease(c, r, o); }));
  // Commit runs on the dispatcher: requests of one connection are then handled in the order
  // they were sent, which the idempotent producer's sequence check relies on.
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kCommit, kInline, [](BrokerImpl* b, Ctx c, Req r, Resp o) { b->HandleCommit(c, r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kOpenConsume, kPool, [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleOpenConsume(r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kGetSegment, kPool, [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleGetSegment(r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kListOffsets, kPool, [](BrokerImpl* b, Ctx, Req r, Resp o) { b->HandleListOffsets(r, o); }));
  RDMQ_RETURN_IF_ERROR(
      reg(Api::kWatch, kInline, [](BrokerImpl* b, Ctx c, Req r, Resp o) { b->HandleWatch(c, r, o); }));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

void BrokerImpl::HandleHello(const rpc::RequestContext& ctx, std::span<const std::byte> bytes,
                             rpc::ResponseBuffer& resp) {
  protocol::HelloRequest req;
  if (!DecodeRequest(Api::kHello, bytes, &req, resp)) return;
  if (req.protocol_version != protocol::kProtocolVersion) {
    return Error(resp,
                 Status(WireError::kNotSupported, "protocol version " + std::to_string(req.protocol_version) +
                                                      "; this broker speaks version " +
                                                      std::to_string(protocol::kProtocolVersion)));
  }
  {
    std::lock_guard lock(sessions_mu_);
    auto& s = sessions_[ctx.client_id];
    if (!s) {
      s = std::make_shared<Session>();
      s->client_id = ctx.client_id;
    }
    s->name = req.client_name;
  }
  protocol::HelloResponse r;
  r.client_id = ctx.client_id;
  r.broker_id = cfg_.broker_id;
  r.data_address = data_fabric_->address();
  r.provider = static_cast<uint8_t>(data_fabric_->provider());
  r.lease_ms = cfg_.lease_ms;
  r.max_message_bytes = cfg_.topic_defaults.max_message_bytes;
  RDMQ_LOG(kDebug, "broker", "hello")
      .kv("client", ctx.client_id)
      .kv("name", req.client_name)
      .kv("peer", ctx.peer);
  Ok(resp, r);
}

void BrokerImpl::HandleCreateTopic(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::CreateTopicRequest req;
  if (!DecodeRequest(Api::kCreateTopic, bytes, &req, resp)) return;
  std::lock_guard admin(admin_mu_);
  if (Status s = metadata::ValidateTopicName(req.name); !s.ok()) return Error(resp, FromMeta(s));
  auto cfg = ApplyConfigs(cfg_.topic_defaults, req.configs);
  if (!cfg.ok()) return Error(resp, cfg.status());
  auto info = meta_->CreateTopic(req.name, *cfg);
  if (!info.ok()) return Error(resp, FromMeta(info.status()));
  auto topic = std::make_shared<Topic>();
  topic->info = *info;
  for (int32_t i = 0; i < info->config.partitions; ++i) {
    auto p = OpenPartition(*info, i);
    if (!p.ok()) {
      RDMQ_LOG(kError, "broker", "creating a topic failed; rolling back")
          .kv("topic", req.name)
          .kv("error", p.status());
      for (auto& opened : topic->partitions) ClosePartition(*opened, true);
      (void)meta_->DeleteTopic(req.name);
      return Error(resp, Status(WireError::kStorageError, p.status().ToString()));
    }
    topic->partitions.push_back(std::move(*p));
  }
  {
    std::lock_guard lock(topics_mu_);
    topics_[req.name] = topic;
  }
  RDMQ_LOG(kInfo, "broker", "topic created")
      .kv("topic", req.name)
      .kv("id", info->id)
      .kv("partitions", info->config.partitions);
  Ok(resp, protocol::TopicResponse{ToWire(*info)});
}

void BrokerImpl::HandleDeleteTopic(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::TopicNameRequest req;
  if (!DecodeRequest(Api::kDeleteTopic, bytes, &req, resp)) return;
  std::lock_guard admin(admin_mu_);
  if (Status s = meta_->DeleteTopic(req.name); !s.ok()) return Error(resp, FromMeta(s));
  std::shared_ptr<Topic> topic;
  {
    std::lock_guard lock(topics_mu_);
    auto it = topics_.find(req.name);
    if (it != topics_.end()) {
      topic = it->second;
      topics_.erase(it);
    }
  }
  if (topic) {
    for (auto& p : topic->partitions) ClosePartition(*p, true);
  }
  RDMQ_LOG(kInfo, "broker", "topic deleted").kv("topic", req.name);
  Ok(resp, protocol::Empty{});
}

void BrokerImpl::HandleDescribeTopic(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::TopicNameRequest req;
  if (!DecodeRequest(Api::kDescribeTopic, bytes, &req, resp)) return;
  std::shared_ptr<Topic> topic;
  {
    std::lock_guard lock(topics_mu_);
    auto it = topics_.find(req.name);
    if (it != topics_.end()) topic = it->second;
  }
  if (!topic) return Error(resp, Status(WireError::kUnknownTopic, "unknown topic '" + req.name + "'"));
  protocol::DescribeTopicResponse r;
  r.topic = ToWire(topic->info);
  for (const auto& pp : topic->partitions) {
    Partition& p = *pp;
    std::lock_guard lock(p.mu);
    if (p.deleted) continue;
    protocol::PartitionInfo pi;
    pi.partition = p.index;
    pi.log_start_offset = p.log->LogStartOffset().value();
    pi.high_watermark = p.high_watermark;
    pi.active_segment_base = p.active_base;
    pi.exclusive_lease = p.exclusive ? 1 : 0;
    for (const auto& s : p.log->Segments()) {
      ++pi.segments;
      pi.bytes += s.committed.value();
    }
    r.partitions.push_back(pi);
  }
  Ok(resp, r);
}

void BrokerImpl::HandleListTopics(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::Empty req;
  if (!DecodeRequest(Api::kListTopics, bytes, &req, resp)) return;
  protocol::ListTopicsResponse r;
  for (const auto& t : meta_->ListTopics()) r.topics.push_back(ToWire(t));
  Ok(resp, r);
}

void BrokerImpl::HandleAlterTopic(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::AlterTopicRequest req;
  if (!DecodeRequest(Api::kAlterTopic, bytes, &req, resp)) return;
  std::lock_guard admin(admin_mu_);
  std::shared_ptr<Topic> topic;
  {
    std::lock_guard lock(topics_mu_);
    auto it = topics_.find(req.name);
    if (it != topics_.end()) topic = it->second;
  }
  if (!topic) return Error(resp, Status(WireError::kUnknownTopic, "unknown topic '" + req.name + "'"));
  auto cfg = ApplyConfigs(topic->info.config, req.configs);
  if (!cfg.ok()) return Error(resp, cfg.status());
  auto info = meta_->AlterTopic(req.name, *cfg);
  if (!info.ok()) return Error(resp, FromMeta(info.status()));
  // New partitions open now; other changes apply to partitions as they are reopened (restart).
  std::vector<std::shared_ptr<Partition>> added;
  for (int32_t i = static_cast<int32_t>(topic->partitions.size()); i < info->config.partitions; ++i) {
    auto p = OpenPartition(*info, i);
    if (!p.ok()) return Error(resp, Status(WireError::kStorageError, p.status().ToString()));
    added.push_back(std::move(*p));
  }
  {
    std::lock_guard lock(topics_mu_);
    topic->info = *info;
    topic->partitions.insert(topic->partitions.end(), added.begin(), added.end());
  }
  RDMQ_LOG(kInfo, "broker", "topic altered").kv("topic", req.name).kv("partitions", info->config.partitions);
  Ok(resp, protocol::TopicResponse{ToWire(*info)});
}

void BrokerImpl::HandleInitProducerId(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::Empty req;
  if (!DecodeRequest(Api::kInitProducerId, bytes, &req, resp)) return;
  auto id = meta_->AllocateProducerId();
  if (!id.ok()) return Error(resp, Status(WireError::kStorageError, id.status().ToString()));
  Ok(resp, protocol::InitProducerIdResponse{id->value(), 0});
}

// ---------------------------------------------------------------------------------------------
// Producing

void BrokerImpl::HandleOpenProduce(const rpc::RequestContext& ctx, std::span<const std::byte> bytes,
                                   rpc::ResponseBuffer& resp) {
  protocol::OpenProduceRequest req;
  if (!DecodeRequest(Api::kOpenProduce, bytes, &req, resp)) return;
  if (req.mode != protocol::ProduceMode::kExclusive && req.mode != protocol::ProduceMode::kShared) {
    return Error(resp, Status(WireError::kInvalidRequest, "produce mode " +
                                                              std::to_string(static_cast<int>(req.mode)) +
                                                              " (1 exclusive, 2 shared)"));
  }
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(sessions_mu_);
    auto it = sessions_.find(ctx.client_id);
    if (it != sessions_.end()) session = it->second;
  }
  if (!session || session->ep_id == 0) {
    return Error(resp, Status(WireError::kInvalidRequest,
                              "connect the data endpoint (Hello, then the data "
                              "handshake) before OpenProduce"));
  }
  auto ack_desc = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(req.ack_region.bytes)));
  if (!ack_desc.ok())
    return Error(resp, Status(WireError::kInvalidRequest, "ack_region: " + ack_desc.status().ToString()));
  if (ack_desc->length < protocol::kAckBlockSize || (ack_desc->access & fabric::kRemoteWrite) == 0) {
    return Error(resp, Status(WireError::kInvalidRequest,
                              "ack_region must be a writable region of at least 64 bytes"));
  }
  auto lp = LockPartition(req.topic, req.partition);
  if (!lp.ok()) return Error(resp, lp.status());
  Partition& p = *lp->partition;
  const std::string where = req.topic + "-" + std::to_string(req.partition);
  if (req.mode == protocol::ProduceMode::kExclusive) {
    if (p.exclusive) {
      const auto h = p.exclusive;
      if (h->session == session) {
        // The same client opening again (it gave up on its lease): the new lease replaces it.
        EndLeaseLocked(p, h, WireError::kLeaseExpired, false);
      } else if (req.producer_id >= 0 && req.producer_id == h->producer_id &&
                 req.producer_epoch > h->producer_epoch) {
        EndLeaseLocked(p, h, WireError::kInvalidProducerEpoch, true);  // fenced by the newer epoch
      } else {
        return Error(resp, Status(WireError::kPartitionBusy,
                                  where + " is held by an exclusive producer (client '" + h->session->name +
                                      "', lease " + std::to_string(h->id) + ")"));
      }
    }
    if (!p.shared.empty()) {
      return Error(resp,
                   Status(WireError::kPartitionBusy, where + " has " + std::to_string(p.shared.size()) +
                                                         " shared producers; an exclusive lease must wait"));
    }
  } else if (p.exclusive) {
    return Error(resp,
                 Status(WireError::kPartitionBusy, where + " is held by an exclusive producer (client '" +
                                                       p.exclusive->session->name + "')"));
  }
  if (req.producer_id >= 0) {
    auto it = p.producers.find(req.producer_id);
    if (it != p.producers.end() && req.producer_epoch < it->second.epoch) {
      return Error(resp, Status(WireError::kInvalidProducerEpoch,
                                "producer " + std::to_string(req.producer_id) + " epoch " +
                                    std::to_string(req.producer_epoch) + " is older than epoch " +
                                    std::to_string(it->second.epoch) + " already seen in " + where));
    }
  }

  auto l = std::make_shared<Lease>();
  l->mode = req.mode;
  l->session = session;
  l->partition = lp->partition;
  l->producer_id = req.producer_id;
  l->producer_epoch = req.producer_epoch;
  {
    std::lock_guard llock(leases_mu_);
    if (free_slots_.empty()) {
      return Error(resp, Status(WireError::kUnavailable, "this broker holds " + std::to_string(kMaxLeases) +
                                                             " leases, its maximum; retry later"));
    }
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    l->id = next_lease_id_++;
    l->index = slot | (uint32_t{lease_reuse_[slot]} << protocol::kLeaseSlotBits);
    l->ack_buf = staging_->data() + uint64_t{slot} * protocol::kAckBlockSize;
    lease_slots_[slot] = l;
  }
  auto release_slot = [&] {
    std::lock_guard llock(leases_mu_);
    const uint32_t slot = protocol::LeaseSlot(l->index);
    lease_slots_[slot].reset();
    ++lease_reuse_[slot];
    free_slots_.push_back(slot);
  };
  {
    std::lock_guard slock(session->mu);
    if (session->closed || !session->ep) {
      release_slot();
      return Error(resp, Status(WireError::kUnavailable, "the client's data endpoint is closed"));
    }
    auto ack = session->ep->Attach(*ack_desc);
    if (!ack.ok()) {
      release_slot();
      return Error(resp, Status(WireError::kInvalidRequest,
                                "cannot attach the ack region: " + ack.status().ToString()));
    }
    l->ack = std::move(*ack);
  }
  if (Status s = GrantSegment(p, *l); !s.ok()) {
    release_slot();
    return Error(resp, s);
  }
  l->deadline_ns = MonoNanos() + uint64_t{cfg_.lease_ms} * 1'000'000;
  l->acked_segment = p.active_base;
  l->acked_position = l->mode == protocol::ProduceMode::kExclusive ? p.committed : 0;
  l->acked_next_offset = p.high_watermark;
  if (l->mode == protocol::ProduceMode::kExclusive) {
    p.exclusive = l;
  } else {
    p.shared[l->id] = l;
    p.shared_until_ns = MonoNanos() + 4 * uint64_t{cfg_.lease_ms} * 1'000'000;
  }
  {
    std::lock_guard slock(session->mu);
    session->leases.insert(l->id);
  }
  {
    std::lock_guard llock(leases_mu_);
    leases_[l->id] = l;
  }
  n_.leases_granted.fetch_add(1, std::memory_order_relaxed);
  protocol::LeaseResponse r;
  (void)DescribeLease(p, *l, &r);
  RDMQ_LOG(kDebug, "broker", "lease granted")
      .kv("partition", where)
      .kv("lease", l->id)
      .kv("mode", l->mode == protocol::ProduceMode::kExclusive ? "exclusive" : "shared")
      .kv("client", ctx.client_id)
      .kv("producer_id", l->producer_id)
      .kv("segment", l->segment_base)
      .kv("position", p.committed);
  Ok(resp, r);
}

void BrokerImpl::HandleRenewLease(const rpc::RequestContext& ctx, std::span<const std::byte> bytes,
                                  rpc::ResponseBuffer& resp) {
  protocol::LeaseRequest req;
  if (!DecodeRequest(Api::kRenewLease, bytes, &req, resp)) return;
  auto lr = FindLease(req.lease_id, ctx.client_id);
  if (!lr.ok()) return Error(resp, lr.status());
  auto l = *lr;
  Partition& p = *l->partition;
  std::lock_guard lock(p.mu);
  if (l->ended)
    return Error(resp, Status(WireError::kLeaseExpired, "lease " + std::to_string(l->id) + " ended"));
  if (p.deleted) return Error(resp, TopicDeleted(p.topic.name));
  l->deadline_ns = MonoNanos() + uint64_t{cfg_.lease_ms} * 1'000'000;
  if (l->mode == protocol::ProduceMode::kExclusive && (req.flags & protocol::kRenewRoll) != 0 &&
      l->segment_base == p.active_base && p.committed > 0) {
    if (Status s = p.log->Roll(); !s.ok()) {
      return Error(resp, Status(WireError::kStorageError, "rolling " + p.topic.name + "-" +
                                                              std::to_string(p.index) + ": " + s.ToString()));
    }
    if (Status s = SyncSegments(p); !s.ok())
      return Error(resp, Status(WireError::kStorageError, s.ToString()));
    AfterPublish(p);
  }
  if (l->segment_base != p.active_base) {
    if (Status s = GrantSegment(p, *l); !s.ok()) return Error(resp, s);
  }
  protocol::LeaseResponse r;
  (void)DescribeLease(p, *l, &r);
  Ok(resp, r);
}

void BrokerImpl::HandleReleaseLease(const rpc::RequestContext& ctx, std::span<const std::byte> bytes,
                                    rpc::ResponseBuffer& resp) {
  protocol::LeaseRequest req;
  if (!DecodeRequest(Api::kReleaseLease, bytes, &req, resp)) return;
  auto lr = FindLease(req.lease_id, ctx.client_id);
  if (!lr.ok()) return Error(resp, lr.status());
  EndLease(*lr, WireError::kLeaseExpired, false);
  Ok(resp, protocol::Empty{});
}

void BrokerImpl::HandleCommit(const rpc::RequestContext& ctx, std::span<const std::byte> bytes,
                              rpc::ResponseBuffer& resp) {
  protocol::CommitRequest req;
  if (!DecodeRequest(Api::kCommit, bytes, &req, resp)) return;
  auto lr = FindLease(req.lease_id, ctx.client_id);
  if (!lr.ok()) return Error(resp, lr.status());
  auto l = *lr;
  Partition& p = *l->partition;
  std::lock_guard lock(p.mu);
  if (l->ended)
    return Error(resp, Status(WireError::kLeaseExpired, "lease " + std::to_string(l->id) + " ended"));
  if (p.deleted) return Error(resp, TopicDeleted(p.topic.name));
  const std::string where = p.topic.name + "-" + std::to_string(p.index);
  auto seg = p.segments.find(req.segment_base);
  if (seg == p.segments.end() || seg->second.info.sealed) {
    return Error(resp,
                 Status(WireError::kStaleLocation,
                        "segment " + std::to_string(req.segment_base) + " of " + where +
                            " is not open for writing (active: " + std::to_string(p.active_base) + ")"));
  }
  if (req.length == 0) return Error(resp, Status(WireError::kInvalidRequest, "commit of 0 bytes"));
  const uint64_t capacity = seg->second.info.capacity;
  std::byte* data = seg->second.info.data();
  const bool shared = l->mode == protocol::ProduceMode::kShared;
  ProducerState next;
  int32_t first_seq = -1;
  if (req.position < capacity && req.length <= capacity - req.position) {
    if (!shared && req.position != p.committed) {
      return Error(resp, Status(WireError::kInvalidRequest,
                                "exclusive commit at position " + std::to_string(req.position) + " of " +
                                    where + "; the committed end is " + std::to_string(p.committed)));
    }
    if (Status s = CheckProducer(p, *l, data + req.position, req.length, shared, &next, &first_seq);
        !s.ok()) {
      n_.commit_errors.fetch_add(1, std::memory_order_relaxed);
      // Exclusive: the bytes sit at the committed end, where recovery would adopt them.
      if (!shared && req.segment_base == p.active_base) SpoilTail(p, req.position, req.length);
      return Error(resp, s);
    }
  }
  storage::CommitRequest cr;
  cr.mode = shared ? storage::CommitMode::kShared : storage::CommitMode::kExclusive;
  cr.segment = Offset(req.segment_base);
  cr.position = Position(req.position);
  cr.length = req.length;
  cr.expected_next_offset = shared ? kNoOffset : Offset(req.next_offset);
  l->deadline_ns = MonoNanos() + uint64_t{cfg_.lease_ms} * 1'000'000;
  auto out = p.log->Commit(cr);
  protocol::CommitResponse r;
  if (!out.ok()) {
    if (out.status().is(storage::StorageErrc::kSegmentFull)) {
      // A reservation crossing (or past) the end: the segment ends there once what precedes it
      // is committed. The producer renews for the next segment and retries.
      (void)SyncSegments(p);
      AfterPublish(p);
      r.base_offset = -1;
      r.committed_position = p.committed;
      r.high_watermark = p.high_watermark;
      r.credit_end = capacity;
      r.flags = protocol::kCommitFlagSegmentFull;
      return Ok(resp, r);
    }
    n_.commit_errors.fetch_add(1, std::memory_order_relaxed);
    RDMQ_LOG(kWarn, "broker", "commit refused")
        .kv("partition", where)
        .kv("lease", l->id)
        .kv("error", out.status());
    if (!shared && req.segment_base == p.active_base && req.position == p.committed) {
      SpoilTail(p, req.position, req.length);
    }
    return Error(resp, Status(protocol::ToWireError(out.status()), std::string(out.status().context())));
  }
  n_.commits.fetch_add(1, std::memory_order_relaxed);
  if (l->producer_id >= 0) p.producers[l->producer_id] = next;
  p.dirty = true;
  if (shared && !out->complete) {
    p.pending[{req.segment_base, req.position}] = PendingRange{l->id, l->producer_id, first_seq};
  }
  r.base_offset = out->complete ? out->base_offset.value() : -1;
  std::vector<storage::CompletedRange> completed(out->completed.begin(), out->completed.end());
  std::vector<storage::CompletedRange> dropped(out->dropped.begin(), out->dropped.end());
  (void)SyncSegments(p);
  if (shared) {
    SettleShared(p, completed, dropped);
    if (out->complete) {
      l->acked_segment = req.segment_base;
      l->acked_position = std::max(l->acked_position, req.position + req.length);
    }
  } else {
    l->acked_segment = p.active_base;
    l->acked_position = p.committed;
    l->acked_next_offset = p.high_watermark;
  }
  if (!completed.empty()) AfterPublish(p);
  r.committed_position = out->committed.value();
  r.high_watermark = out->high_watermark.value();
  r.credit_end = capacity;
  Ok(resp, r);
}

// ---------------------------------------------------------------------------------------------
// Consuming

void BrokerImpl::HandleOpenConsume(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::PartitionRequest req;
  if (!DecodeRequest(Api::kOpenConsume, bytes, &req, resp)) return;
  auto lp = LockPartition(req.topic, req.partition);
  if (!lp.ok()) return Error(resp, lp.status());
  Partition& p = *lp->partition;
  protocol::OpenConsumeResponse r;
  r.slot.bytes = p.slot_descriptor;
  r.log_start_offset = p.log->LogStartOffset().value();
  r.high_watermark = p.high_watermark;
  for (const auto& [base, reg] : p.segments) r.segments.push_back(ReadLocation(base, reg));
  Ok(resp, r);
}

void BrokerImpl::HandleGetSegment(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::GetSegmentRequest req;
  if (!DecodeRequest(Api::kGetSegment, bytes, &req, resp)) return;
  auto lp = LockPartition(req.topic, req.partition);
  if (!lp.ok()) return Error(resp, lp.status());
  Partition& p = *lp->partition;
  auto it = p.segments.find(req.base_offset);
  if (it == p.segments.end()) {
    return Error(resp, Status(WireError::kStaleLocation,
                              "no segment with base offset " + std::to_string(req.base_offset) + " in " +
                                  req.topic + "-" + std::to_string(req.partition) + " (log start " +
                                  std::to_string(p.log->LogStartOffset().value()) + ")"));
  }
  protocol::GetSegmentResponse r;
  r.segment = ReadLocation(it->first, it->second);
  Ok(resp, r);
}

void BrokerImpl::HandleListOffsets(std::span<const std::byte> bytes, rpc::ResponseBuffer& resp) {
  protocol::ListOffsetsRequest req;
  if (!DecodeRequest(Api::kListOffsets, bytes, &req, resp)) return;
  auto lp = LockPartition(req.topic, req.partition);
  if (!lp.ok()) return Error(resp, lp.status());
  Partition& p = *lp->partition;
  protocol::ListOffsetsResponse r;
  r.high_watermark = p.high_watermark;
  auto locate = [&](int64_t offset) -> Status {
    r.offset = offset;
    if (offset == p.high_watermark) {
      r.segment_base = p.active_base;
      r.position = p.committed;
      return Status::Ok();
    }
    auto rr = p.log->Read(Offset(offset), 1);
    if (!rr.ok()) {
      if (rr.status().is(Errc::kOutOfRange)) {
        return Status(WireError::kOffsetOutOfRange, "offset " + std::to_string(offset) + " of " + req.topic +
                                                        "-" + std::to_string(req.partition) +
                                                        " is outside [" +
                                                        std::to_string(p.log->LogStartOffset().value()) +
                                                        ", " + std::to_string(p.high_watermark) + "]");
      }
      return rr.status();
    }
    r.segment_base = rr->segment.value();
    r.position = rr->position.value();
    return Status::Ok();
  };
  Status s;
  if (req.spec == protocol::kListEarliest) {
    s = locate(p.log->LogStartOffset().value());
  } else if (req.spec == protocol::kListLatest) {
    s = locate(p.high_watermark);
  } else if (req.spec == protocol::kListOffset) {
    s = locate(req.offset);
  } else if (req.spec >= 0) {
    auto o = p.log->OffsetForTimestamp(TimestampMs(req.spec));
    if (!o.ok()) {
      s = o.status();
    } else if (*o == kNoOffset) {
      s = locate(p.high_watermark);
      r.offset = -1;
    } else {
      s = locate(o->value());
    }
  } else {
    s = Status(WireError::kInvalidRequest, "ListOffsets spec " + std::to_string(req.spec) +
                                               " (-2 earliest, -1 latest, -3 an offset, >= 0 a timestamp)");
  }
  if (!s.ok()) return Error(resp, s);
  Ok(resp, r);
}

void BrokerImpl::HandleWatch(const rpc::RequestContext& ctx, std::span<const std::byte> bytes,
                             rpc::ResponseBuffer& resp) {
  protocol::WatchRequest req;
  if (!DecodeRequest(Api::kWatch, bytes, &req, resp)) return;
  auto pr = FindPartition(req.topic, req.partition);
  if (!pr.ok()) return Error(resp, pr.status());
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(sessions_mu_);
    auto it = sessions_.find(ctx.client_id);
    if (it != sessions_.end()) session = it->second;
  }
  if (!session || session->ep_id == 0) {
    return Error(resp, Status(WireError::kInvalidRequest, "Watch needs the client's data endpoint"));
  }
  Partition& p = **pr;
  std::lock_guard lock(p.mu);
  if (p.deleted) return Error(resp, TopicDeleted(req.topic));
  const uint64_t gen =
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p.slot.memory)).load(std::memory_order_acquire);
  if (gen == req.generation) p.watches.push_back(Watch{session, gen});
  Ok(resp, protocol::WatchResponse{gen});
}

}  // namespace rdmq::broker::internal
