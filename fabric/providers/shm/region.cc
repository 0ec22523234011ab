#include "region.h"

#include <new>
#include <string>

#include "fabric/futex.h"

namespace rdmq::fabric::internal {

Result<std::unique_ptr<ShmCq>> ShmCq::Create(std::shared_ptr<ShmCore> core) {
  RDMQ_ASSIGN_OR_RETURN(UniqueFd fd, CreateMemfd("rdmq-shm-cq", PageSize()));
  RDMQ_ASSIGN_OR_RETURN(Mapping m, MapShared(fd.get(), PageSize(), 0, true, "shm completion queue doorbell"));
  return std::unique_ptr<ShmCq>(new ShmCq(std::move(core), std::move(fd), std::move(m)));
}

ShmCq::ShmCq(std::shared_ptr<ShmCore> core, UniqueFd fd, Mapping m)
    : SoftCq(new (m.data()) Bell()), core_(std::move(core)), fd_(std::move(fd)), map_(std::move(m)) {}

Result<uint64_t> ShmRegion::NewKey(uint64_t offset, uint64_t length, uint32_t access, uint64_t scope) const {
  ShmKey k;
  k.fds = fds_;
  k.base = reinterpret_cast<uint64_t>(data_) + offset;
  k.length = length;
  k.file_offset = file_offset_ + offset;
  k.access = access;
  k.scope = scope;
  return core_->AddKey(std::move(k));
}

Status ShmRemote::WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) {
  if (offset % 8 != 0)
    return Status(FabricErrc::kUnaligned, "WaitWhileEqual offset " + std::to_string(offset));
  if (offset + 8 > length_) {
    return Status(FabricErrc::kOutOfBounds, "WaitWhileEqual offset " + std::to_string(offset));
  }
  return WaitWordWhileEqual(ptr_ + offset, expected, timeout);
}

Status ShmRemote::Wake(uint64_t offset) {
  if (offset % 8 != 0 || offset + 8 > length_) return Status(FabricErrc::kOutOfBounds, "Wake");
  WakeWord(ptr_ + offset);
  return Status::Ok();
}

}  // namespace rdmq::fabric::internal
