// Connection setup on the verbs provider. A connector opens the bootstrap stream and sends a
// hello; Accept answers with the rdma_cm port and a token (its endpoint id); the connector
// resolves the address and route with rdma_cm, creates its QP and calls rdma_connect with the
// token as private data; Accept picks the connect request carrying its token (others are kept
// for their own Accept), creates its QP and accepts.
#include <netdb.h>

#include <algorithm>
#include <memory>

#include "cm.h"
#include "endpoint.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/coding.h"

namespace rdmq::fabric::internal {

Status VerbsEpCore::CreateQp(rdma_cm_id* id) {
  if (id->verbs != fab_.ctx) {
    return Status(FabricErrc::kNoDevice,
                  "rdma_cm chose device " +
                      std::string(id->verbs ? ibv_get_device_name(id->verbs->device) : "?") +
                      " but this fabric uses " + fab_.device_name);
  }
  ibv_qp_init_attr a{};
  a.send_cq = send_cq_->cq();
  a.recv_cq = (recv_cq_ ? recv_cq_ : send_cq_)->cq();
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 0;
  a.cap.max_send_wr = max_send_ + kInternalReserve;
  a.cap.max_recv_wr = std::max<uint32_t>(max_recv_, 1);
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = want_inline_;
  if (rdma_create_qp(id, fab_.pd.get(), &a) != 0) {
    a.cap.max_inline_data = 0;  // the device may allow less inline data than asked for
    if (rdma_create_qp(id, fab_.pd.get(), &a) != 0) {
      return CmError("rdma_create_qp (send " + std::to_string(a.cap.max_send_wr) + ", recv " +
                     std::to_string(a.cap.max_recv_wr) + " WRs)");
    }
  }
  max_inline_ = a.cap.max_inline_data;
  qp_ = id->qp;
  qp_num_ = qp_->qp_num;
  const int local_write = IBV_ACCESS_LOCAL_WRITE;  // an int: ibv_reg_mr's macro mixes enum types
  scratch_mr_.reset(ibv_reg_mr(fab_.pd.get(), scratch_, sizeof scratch_, local_write));
  if (!scratch_mr_) return CmError("ibv_reg_mr (8-byte atomic scratch)");
  return Status::Ok();
}

rdma_conn_param VerbsEpCore::ConnParam(const void* priv, uint8_t priv_len) const {
  rdma_conn_param p{};
  p.private_data = priv;
  p.private_data_len = priv_len;
  const int rd = std::min(16, fab_.attr.max_qp_rd_atom);
  const int init = std::min(16, fab_.attr.max_qp_init_rd_atom);
  p.responder_resources = static_cast<uint8_t>(std::max(rd, 1));
  p.initiator_depth = static_cast<uint8_t>(std::max(init, 1));
  p.retry_count = 7;
  p.rnr_retry_count = 7;  // a SEND waits for its receive, as on the other providers
  return p;
}

void VerbsEpCore::Register() {
  auto self = shared_from_this();
  send_cq_->AddEndpoint(qp_num_, self);
  if (recv_cq_ != nullptr && recv_cq_ != send_cq_) recv_cq_->AddEndpoint(qp_num_, self);
}

Status VerbsEpCore::ConnectQp(const std::string& host) {
  RDMQ_RETURN_IF_ERROR(SendHello(wire::kFrameHello, MakeHello(fab_.address)));
  RDMQ_ASSIGN_OR_RETURN(wire::Hello ack, AwaitHelloAck());
  RDMQ_ASSIGN_OR_RETURN(cm_id_, CreateCmId(cm_channel_));
  rdma_cm_id* id = cm_id_.get();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(ack.aux);
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
    return Status(Errc::kInvalidArgument, "cannot resolve '" + host + "' to an IPv4 address");
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  const int ms = static_cast<int>(timeout_.count());
  if (rdma_resolve_addr(id, nullptr, res->ai_addr, ms) != 0) return CmError("rdma_resolve_addr " + host);
  RDMQ_RETURN_IF_ERROR(
      ExpectCmEvent(cm_channel_.get(), RDMA_CM_EVENT_ADDR_RESOLVED, timeout_, "resolve address " + host));
  if (rdma_resolve_route(id, ms) != 0) return CmError("rdma_resolve_route " + host);
  RDMQ_RETURN_IF_ERROR(
      ExpectCmEvent(cm_channel_.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_, "resolve route to " + host));
  RDMQ_RETURN_IF_ERROR(CreateQp(id));
  uint8_t token[8];
  coding::StoreLE<uint64_t>(token, ack.endpoint_id);
  rdma_conn_param param = ConnParam(token, sizeof token);
  if (rdma_connect(id, &param) != 0) return CmError("rdma_connect " + host);
  return ExpectCmEvent(cm_channel_.get(), RDMA_CM_EVENT_ESTABLISHED, timeout_, "connect to " + host);
}

Result<rdma_cm_id*> VerbsEpCore::TakeConnectRequest(uint64_t deadline) {
  MutexLock l(fab_.cm_mu);
  for (;;) {
    auto it = fab_.stashed_requests.find(id_);
    if (it != fab_.stashed_requests.end()) {
      rdma_cm_id* child = it->second;
      fab_.stashed_requests.erase(it);
      return child;
    }
    const uint64_t now = MonoNanos();
    if (now >= deadline)
      return Status(Errc::kTimeout, "verbs accept: no rdma_cm connect request from the peer");
    auto ev =
        NextCmEvent(fab_.listen_channel.get(), std::chrono::milliseconds((deadline - now) / 1'000'000 + 1));
    if (!ev.ok()) {
      if (ev.status().is(Errc::kTimeout)) continue;
      return ev.status();
    }
    rdma_cm_event* e = *ev;
    if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      rdma_ack_cm_event(e);
      continue;
    }
    uint64_t token = 0;
    if (e->param.conn.private_data_len >= 8) token = coding::LoadLE<uint64_t>(e->param.conn.private_data);
    rdma_cm_id* id = e->id;
    rdma_ack_cm_event(e);
    if (token == id_) return id;
    if (token == 0) {
      rdma_reject(id, nullptr, 0);
      rdma_destroy_id(id);
    } else {
      fab_.stashed_requests[token] = id;
    }
  }
}

Status VerbsEpCore::AcceptQp(std::chrono::milliseconds timeout) {
  wire::Hello h = MakeHello(fab_.address);
  h.aux = fab_.cm_port;
  RDMQ_RETURN_IF_ERROR(SendHello(wire::kFrameHelloAck, h));
  const uint64_t deadline = MonoNanos() + static_cast<uint64_t>(timeout.count()) * 1'000'000;
  RDMQ_ASSIGN_OR_RETURN(rdma_cm_id * child, TakeConnectRequest(deadline));
  // The child's events go to the endpoint's own channel from now on.
  CmIdPtr owned(child);
  RDMQ_ASSIGN_OR_RETURN(cm_channel_, CreateCmChannel());
  if (rdma_migrate_id(child, cm_channel_.get()) != 0) return CmError("rdma_migrate_id");
  cm_id_ = std::move(owned);
  RDMQ_RETURN_IF_ERROR(CreateQp(child));
  rdma_conn_param param = ConnParam(nullptr, 0);
  if (rdma_accept(child, &param) != 0) return CmError("rdma_accept");
  return ExpectCmEvent(cm_channel_.get(), RDMA_CM_EVENT_ESTABLISHED, timeout, "accept from " + peer_node_);
}

}  // namespace rdmq::fabric::internal
