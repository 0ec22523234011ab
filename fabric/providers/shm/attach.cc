// shm attach: a peer asks for key K over the bootstrap socket; the owner checks the key (and that
// a grant's key is used on the connection it was made for) and replies with the window and the
// region's fd (read-only unless the key grants write or atomics); the peer maps the window.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

#include "endpoint.h"
#include "rdmq/common/coding.h"
#include "rdmq/common/log.h"

namespace rdmq::fabric::internal {

Result<std::unique_ptr<RemoteRegion>> ShmEpCore::Attach(const RegionDescriptor& desc) {
  RDMQ_RETURN_IF_ERROR(CheckAttachable(desc));
  uint64_t req_id;
  {
    MutexLock l(mu_);
    if (!alive()) return Gone();
    req_id = next_req_++;
  }
  const std::string req = wire::EncodeAttachRequest({req_id, desc.key});
  RDMQ_RETURN_IF_ERROR(conn_->Send(wire::kFrameAttachReq, 0, coding::AsBytes(req)));
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  UniqueLock l(mu_);
  while (attach_replies_.count(req_id) == 0 && alive()) {
    if (!cv_.WaitUntil(l, deadline)) break;
  }
  auto it = attach_replies_.find(req_id);
  if (it == attach_replies_.end()) {
    if (alive()) return Status(Errc::kTimeout, "shm attach: no answer from " + peer_node_);
    return Gone();
  }
  const wire::AttachReply rep = it->second.first;
  const UniqueFd fd = std::move(it->second.second);
  attach_replies_.erase(it);
  l.Unlock();
  return MapWindow(desc, rep, fd);
}

Result<std::unique_ptr<RemoteRegion>> ShmEpCore::MapWindow(const RegionDescriptor& desc,
                                                           const wire::AttachReply& rep, const UniqueFd& fd) {
  char keyhex[32];
  std::snprintf(keyhex, sizeof keyhex, "%016llx", static_cast<unsigned long long>(desc.key));
  if (rep.errc != 0) {
    return Status(static_cast<FabricErrc>(rep.errc),
                  std::string("shm attach of key ") + keyhex + " at " + peer_node_);
  }
  if (rep.slot >= kKeyPageSlots) return Status(FabricErrc::kProtocol, "shm attach: key slot out of range");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "fstat attached region fd");
  if (rep.file_offset + rep.length > static_cast<uint64_t>(st.st_size)) {
    return Status(FabricErrc::kProtocol, "shm attach: window beyond the end of the region file");
  }
  const uint64_t map_off = RoundDown(rep.file_offset, PageSize());
  const uint64_t delta = rep.file_offset - map_off;
  const uint64_t map_len = RoundUp(delta + rep.length, PageSize());
  const bool writable = (rep.access & (kRemoteWrite | kRemoteAtomic)) != 0;
  // Populated at once: a first touch on the data path would cost a page fault per page.
  RDMQ_ASSIGN_OR_RETURN(Mapping m, MapShared(fd.get(), map_len, map_off, writable,
                                             std::string("attached region (key ") + keyhex + ")", true));
  std::byte* ptr = m.data() + delta;
  const auto* slot =
      reinterpret_cast<const std::atomic<uint64_t>*>(peer_keys_.data() + size_t{rep.slot} * sizeof(uint64_t));
  return std::unique_ptr<RemoteRegion>(new ShmRemote(desc, id_, std::move(m), ptr, rep, slot));
}

void ShmEpCore::OnAttachReply(std::span<const std::byte> payload, std::vector<UniqueFd>& fds) {
  auto rep = wire::DecodeAttachReply(payload);
  {
    MutexLock l(mu_);
    if (!rep.ok()) {
      RDMQ_LOG(kWarn, "fabric", "bad shm attach reply").kv("peer", peer_node_).kv("error", rep.status());
    } else if (rep->errc == 0 && fds.size() != 1) {
      // a grant without its fd: a protocol violation, handled below
    } else {
      attach_replies_[rep->req_id] = {*rep, fds.empty() ? UniqueFd() : std::move(fds[0])};
      cv_.NotifyAll();
      return;
    }
  }
  RDMQ_LOG(kWarn, "fabric", "unexpected shm frame; closing")
      .kv("type", static_cast<uint8_t>(wire::kFrameAttachRep))
      .kv("peer", peer_node_);
  if (conn_) conn_->Close();
}

void ShmEpCore::ServeAttach(std::span<const std::byte> payload) {
  auto req = wire::DecodeAttachRequest(payload);
  if (!req.ok()) {
    conn_->Close();
    return;
  }
  wire::AttachReply rep;
  rep.req_id = req->req_id;
  int fd = -1;
  ShmKey key;  // holds the region's fds open until the reply is sent
  const FabricErrc e = fab_.Lookup(req->key, id_, &key);
  if (e != FabricErrc::kOk_) {
    rep.errc = static_cast<uint32_t>(e);
  } else {
    if (key.access & (kRemoteWrite | kRemoteAtomic)) {
      fd = key.fds->rw.get();
    } else if (auto ro = key.fds->ReadOnly(); ro.ok()) {
      fd = *ro;
    } else {
      RDMQ_LOG(kWarn, "fabric", "shm attach").kv("error", ro.status());
      rep.errc = static_cast<uint32_t>(FabricErrc::kRegistration);
    }
    if (fd >= 0) {
      rep.access = key.access;
      rep.base = key.base;
      rep.length = key.length;
      rep.file_offset = key.file_offset;
      rep.slot = key.slot;
    }
  }
  const std::string bytes = wire::EncodeAttachReply(rep);
  iovec v{const_cast<char*>(bytes.data()), bytes.size()};
  const std::span<const int> fds = fd >= 0 ? std::span<const int>(&fd, 1) : std::span<const int>();
  (void)conn_->Send(wire::kFrameAttachRep, 0, std::span<const iovec>(&v, 1), fds);
}

}  // namespace rdmq::fabric::internal
