#include "region_base.h"

#include "futex.h"

namespace rdmq::fabric::internal {

void LocalRegion::Wake(uint64_t offset) noexcept {
  if (offset + 8 <= size_ && offset % 8 == 0) WakeWord(data_ + offset);
}

Status LocalRegion::WaitWhileEqual(uint64_t offset, uint64_t expected, std::chrono::nanoseconds timeout) {
  if (offset % 8 != 0)
    return Status(FabricErrc::kUnaligned, "WaitWhileEqual offset " + std::to_string(offset));
  if (offset + 8 > size_)
    return Status(FabricErrc::kOutOfBounds, "WaitWhileEqual offset " + std::to_string(offset));
  return WaitWordWhileEqual(data_ + offset, expected, timeout);
}

RegionDescriptor LocalRegion::Describe(uint64_t key, uint64_t offset, uint64_t length,
                                       uint32_t access) const {
  RegionDescriptor d;
  d.provider = provider_;
  d.access = access;
  d.key = key;
  d.base = reinterpret_cast<uint64_t>(data_) + offset;
  d.length = length;
  d.node = node_;
  return d;
}

Status LocalRegion::CheckSubset(uint32_t access) const {
  if ((access & ~access_) != 0) {
    return Status(FabricErrc::kAccessDenied, "descriptor asks for rights the region was not registered with");
  }
  return Status::Ok();
}

Status UnmappedRemote::WaitWhileEqual(uint64_t, uint64_t, std::chrono::nanoseconds) {
  return Status(Errc::kUnsupported, std::string(ProviderName(descriptor().provider)) +
                                        ": waiting on a remote word; the owner notifies with a SEND");
}

Status UnmappedRemote::Wake(uint64_t) {
  return Status(Errc::kUnsupported,
                std::string(ProviderName(descriptor().provider)) +
                    ": waking a remote word; notify the owner with a SEND or WRITE_WITH_IMM");
}

}  // namespace rdmq::fabric::internal
