#include "consume_handlers.h"

#include "rpc_handler.h"

namespace rdmq::broker::internal {

using protocol::Api;
using protocol::WireError;

namespace {

// Where offset `offset` of `p` starts: its segment and byte position.
Status Locate(Partition& p, Offset offset, protocol::ListOffsetsResponse* r) REQUIRES(p.mu) {
  r->offset = offset;
  if (offset == p.active().high_watermark) {
    r->segment_base = p.active().base;
    r->position = p.active().committed;
    return Status::Ok();
  }
  auto rr = p.log().Read(offset, 1);
  if (!rr.ok()) {
    if (rr.status().is(Errc::kOutOfRange)) {
      return Status(WireError::kOffsetOutOfRange,
                    "offset " + std::to_string(offset.value()) + " of " + p.where() + " is outside [" +
                        std::to_string(p.log().LogStartOffset().value()) + ", " +
                        std::to_string(p.active().high_watermark.value()) + "]");
    }
    return rr.status();
  }
  r->segment_base = rr->segment;
  r->position = rr->position;
  return Status::Ok();
}

}  // namespace

Status ConsumeHandlers::Register(rpc::Server& server) {
  using Ctx = const rpc::RequestContext&;
  using metadata::AclOperation;
  constexpr auto kPool = rpc::RunOn::kWorkerPool;
  RDMQ_RETURN_IF_ERROR(Serve<protocol::PartitionRequest>(
      server, Api::kOpenConsume, kPool,
      authz_.OnTopic(AclOperation::kRead, &protocol::PartitionRequest::topic),
      [this](Ctx c, const protocol::PartitionRequest& r) { return OpenConsume(c, r); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::GetSegmentRequest>(
      server, Api::kGetSegment, kPool,
      authz_.OnTopic(AclOperation::kRead, &protocol::GetSegmentRequest::topic),
      [this](Ctx c, const protocol::GetSegmentRequest& r) { return GetSegment(c, r); }));
  RDMQ_RETURN_IF_ERROR(Serve<protocol::ListOffsetsRequest>(
      server, Api::kListOffsets, kPool,
      authz_.OnTopic(AclOperation::kDescribe, &protocol::ListOffsetsRequest::topic),
      [this](Ctx, const protocol::ListOffsetsRequest& r) { return ListOffsets(r); }));
  return Serve<protocol::WatchRequest>(
      server, Api::kWatch, rpc::RunOn::kDispatcher,
      authz_.OnTopic(AclOperation::kRead, &protocol::WatchRequest::topic),
      [this](Ctx c, const protocol::WatchRequest& r) { return Watch(c, r); });
}

Result<std::shared_ptr<Session>> ConsumeHandlers::Reader(const rpc::RequestContext& ctx) const {
  if (!authz_.enabled()) return std::shared_ptr<Session>();
  std::shared_ptr<Session> session = sessions_.Find(ctx.client_id);
  if (!session) return Status(WireError::kInvalidRequest, "no session: Hello first");
  return session;
}

Result<protocol::OpenConsumeResponse> ConsumeHandlers::OpenConsume(const rpc::RequestContext& ctx,
                                                                   const protocol::PartitionRequest& req) {
  RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Session> reader, Reader(ctx));
  protocol::OpenConsumeResponse r;
  if (Status done = topics_.WithPartition(
          req.topic, req.partition,
          [&](Partition& p) REQUIRES(p.mu) {
            r.log_start_offset = p.log().LogStartOffset();
            r.high_watermark = p.active().high_watermark;
            if (!reader) {
              r.slot.bytes = p.slot_descriptor();
              r.segments = p.ReadLocations();
              return Status::Ok();
            }
            RDMQ_ASSIGN_OR_RETURN(r.slot.bytes, p.SlotGrant(reader));
            for (const auto& loc : p.ReadLocations()) {
              RDMQ_ASSIGN_OR_RETURN(auto granted, p.GrantedReadLocation(loc.base_offset, reader));
              r.segments.push_back(std::move(granted));
            }
            return Status::Ok();
          });
      !done.ok())
    return done;
  return r;
}

Result<protocol::GetSegmentResponse> ConsumeHandlers::GetSegment(const rpc::RequestContext& ctx,
                                                                 const protocol::GetSegmentRequest& req) {
  RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Session> reader, Reader(ctx));
  protocol::GetSegmentResponse r;
  if (Status done = topics_.WithPartition(
          req.topic, req.partition,
          [&](Partition& p) REQUIRES(p.mu) {
            const Offset base = req.base_offset;
            const SegmentReg* seg = p.FindSegment(base);
            if (seg == nullptr) {
              return Status(WireError::kStaleLocation,
                            "no segment with base offset " + std::to_string(req.base_offset.value()) +
                                " in " + p.where() + " (log start " +
                                std::to_string(p.log().LogStartOffset().value()) + ")");
            }
            if (reader) {
              RDMQ_ASSIGN_OR_RETURN(r.segment, p.GrantedReadLocation(base, reader));
            } else {
              r.segment = ReadLocation(base, *seg);
            }
            return Status::Ok();
          });
      !done.ok())
    return done;
  return r;
}

Result<protocol::ListOffsetsResponse> ConsumeHandlers::ListOffsets(const protocol::ListOffsetsRequest& req) {
  protocol::ListOffsetsResponse r;
  if (Status done = topics_.WithPartition(
          req.topic, req.partition,
          [&](Partition& p) REQUIRES(p.mu) {
            r.high_watermark = p.active().high_watermark;
            if (req.spec == protocol::kListEarliest) return Locate(p, p.log().LogStartOffset(), &r);
            if (req.spec == protocol::kListLatest) return Locate(p, r.high_watermark, &r);
            if (req.spec == protocol::kListOffset) return Locate(p, req.offset, &r);
            if (req.spec >= 0) {
              RDMQ_ASSIGN_OR_RETURN(Offset o, p.log().OffsetForTimestamp(TimestampMs(req.spec)));
              if (o != kNoOffset) return Locate(p, o, &r);
              RDMQ_RETURN_IF_ERROR(Locate(p, r.high_watermark, &r));
              r.offset = kNoOffset;
              return Status::Ok();
            }
            return Status(WireError::kInvalidRequest,
                          "ListOffsets spec " + std::to_string(req.spec) +
                              " (-2 earliest, -1 latest, -3 an offset, >= 0 a timestamp)");
          });
      !done.ok())
    return done;
  return r;
}

Result<protocol::WatchResponse> ConsumeHandlers::Watch(const rpc::RequestContext& ctx,
                                                       const protocol::WatchRequest& req) {
  RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Partition> pp, topics_.Find(req.topic, req.partition));
  std::shared_ptr<Session> session = sessions_.Find(ctx.client_id);
  if (!session || session->ep_id.load() == 0) {
    return Status(WireError::kInvalidRequest, "Watch needs the client's data endpoint");
  }
  Partition& p = *pp;
  MutexLock lock(p.mu);
  if (p.deleted()) return TopicDeleted(req.topic);
  const uint64_t gen = p.SlotGeneration();
  if (gen == req.generation) p.AddWatch(internal::Watch{session, gen});
  return protocol::WatchResponse{gen};
}

}  // namespace rdmq::broker::internal
