// A client speaking rdmq's protocol by hand (docs/protocol.md): its own connection, lease,
// one-sided writes and ack blocks, for the tests that must send what rdmq's own clients never
// would (bad input) or play a part no client plays (a partition's leader writing a follower).
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rdmq/client/connection.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"
#include "support/test_util.h"

namespace rdmq::test {

// A client speaking the protocol by hand: its own lease, writes and acks.
class RawClient {
 public:
  explicit RawClient(const client::ClientOptions& o) {
    auto c = client::Connection::Open(o);
    REQUIRE_OK(c);
    conn_ = std::move(*c);
    auto m = conn_->fabric().Allocate(1 << 20, fabric::kLocalWrite | fabric::kRemoteWrite);
    REQUIRE_OK(m);
    mem_ = std::move(*m);
    auto g = conn_->data()->GrantAccess(*mem_, 0, 64, fabric::kRemoteWrite);
    REQUIRE_OK(g);
    ack_grant_ = std::move(*g);
    std::vector<fabric::RecvRequest> rr(64);
    REQUIRE_OK(conn_->data()->PostRecv(rr));
  }
  client::Connection& conn() { return *conn_; }

  Result<protocol::LeaseResponse> Open(const std::string& topic, int32_t partition,
                                       protocol::ProduceMode mode, ProducerId pid = kNoProducerId,
                                       int16_t epoch = 0,
                                       protocol::AckLevel acks = protocol::AckLevel::kLeader) {
    protocol::OpenProduceRequest req;
    req.acks = acks;
    req.topic = topic;
    req.partition = PartitionId(partition);
    req.mode = mode;
    req.producer_id = pid;
    req.producer_epoch = epoch;
    req.ack_region.bytes = ack_descriptor();
    auto r = conn_->Call<protocol::LeaseResponse>(protocol::Api::kOpenProduce, req);
    if (r.ok()) Attach(*r);
    return r;
  }

  // Writes from now on go to the window `lease` describes (OpenProduce's, RenewLease's,
  // OpenReplica's or ReplicaTruncate's answer).
  void Attach(const protocol::LeaseResponse& lease) {
    seg_.reset();
    auto d = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(lease.segment.region.bytes)));
    REQUIRE_OK(d);
    auto a = conn_->data()->Attach(*d);
    REQUIRE_OK(a);
    seg_ = std::move(*a);
    loc_ = lease.segment;
    lease_ = lease;
  }
  // The ack block's descriptor, for a lease request.
  std::string ack_descriptor() const { return ack_grant_->descriptor().Encode(); }

  // A range to WRITE: data-area position `pos` of the leased segment.
  struct Range {
    uint64_t pos = 0;
    std::string_view bytes;
  };

  // Copies `bytes` to local memory and WRITEs them at data-area position `pos` of the leased
  // segment (with the lease's immediate when `imm`). Returns the completion's status.
  Status Write(uint64_t pos, std::string_view bytes, bool imm) { return Write({{pos, bytes}}, imm); }
  Status Write(Position pos, std::string_view bytes, bool imm) { return Write(pos.value(), bytes, imm); }
  // WRITEs each range (each with the lease's immediate when `imm`) in one Post: they reach the
  // broker back to back (its commit poller sees them in one poll unless it happens to poll
  // between them). Returns the first failed completion's status.
  Status Write(const std::vector<Range>& ranges, bool imm) {
    std::vector<fabric::WorkRequest> wrs(ranges.size());
    size_t local = 4096;
    for (size_t i = 0; i < ranges.size(); ++i) {
      const std::string_view bytes = ranges[i].bytes;
      REQUIRE(local + bytes.size() <= mem_->size());
      std::memcpy(mem_->data() + local, bytes.data(), bytes.size());
      fabric::WorkRequest& wr = wrs[i];
      wr.opcode = imm ? fabric::Opcode::kWriteImm : fabric::Opcode::kWrite;
      wr.tag = 7;
      wr.local = {mem_->data() + local, bytes.size(), mem_.get()};
      wr.remote = seg_.get();
      wr.remote_offset = loc_.RemoteOffset(Position(ranges[i].pos));
      wr.imm = lease_.lease_index;
      local += bytes.size();
    }
    RDMQ_RETURN_IF_ERROR(conn_->data()->Post(wrs));
    Status first = Status::Ok();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (size_t done = 0; done < wrs.size();) {
      fabric::Completion wc;
      if (conn_->send_cq()->Poll({&wc, 1}) == 0) {
        if (std::chrono::steady_clock::now() > end) return Status(Errc::kTimeout, "write completion");
        std::this_thread::yield();
        continue;
      }
      ++done;
      if (wc.status && first.ok()) first = Status(wc.status, "write");
    }
    return first;
  }

  // Waits for the next ack block the broker writes.
  Result<protocol::AckBlock> NextAck(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    fabric::Completion wc;
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (conn_->recv_cq()->Poll({&wc, 1}) == 0) {
      if (std::chrono::steady_clock::now() > end) return Status(Errc::kTimeout, "no ack");
      std::this_thread::yield();
    }
    if (wc.status) return Status(wc.status, "ack receive");
    std::vector<fabric::RecvRequest> rr(1);
    (void)conn_->data()->PostRecv(rr);
    protocol::AckBlock a;
    if (!protocol::DecodeAckBlock(mem_->data(), &a)) return Status(Errc::kCorruption, "ack block CRC");
    return a;
  }

  // FETCH_ADD on the leased segment region; returns the old value.
  Result<uint64_t> FetchAdd(uint64_t offset, uint64_t add) {
    fabric::WorkRequest wr;
    wr.opcode = fabric::Opcode::kFetchAdd;
    wr.tag = 8;
    wr.local = {mem_->data() + 2048, 8, mem_.get()};
    wr.remote = seg_.get();
    wr.remote_offset = offset;
    wr.operand = add;
    RDMQ_RETURN_IF_ERROR(conn_->data()->Post({&wr, 1}));
    fabric::Completion wc;
    while (conn_->send_cq()->Poll({&wc, 1}) == 0) std::this_thread::yield();
    if (wc.status) return Status(wc.status, "fetch-add");
    uint64_t v;
    std::memcpy(&v, mem_->data() + 2048, 8);
    return v;
  }

  const protocol::LeaseResponse& lease() const { return lease_; }

 private:
  std::unique_ptr<client::Connection> conn_;
  std::unique_ptr<fabric::Region> mem_;
  std::unique_ptr<fabric::Grant> ack_grant_;
  std::unique_ptr<fabric::RemoteRegion> seg_;
  protocol::SegmentLocation loc_;
  protocol::LeaseResponse lease_;
};

}  // namespace rdmq::test
