#include "producer/errors.h"

#include "rdmq/protocol/messages.h"

namespace rdmq::producer {

using protocol::WireError;

bool Retriable(const Status& s) {
  if (s.code().category() == module_error_category<WireError>()) {
    switch (static_cast<WireError>(s.code().value())) {
      case WireError::kLeaseExpired:
      case WireError::kStaleLocation:
      case WireError::kOutOfCredit:
      case WireError::kPartitionBusy:
      case WireError::kDuplicateSequence:
      case WireError::kOutOfOrderSequence:
      case WireError::kUnavailable:
      case WireError::kStorageError:
      case WireError::kNotEnoughReplicas:  // acks=all: until the followers are back in sync
      case WireError::kNotLeader:          // a cluster: the batches follow the partition's leader
        return true;
      default:
        return false;
    }
  }
  return s.is(Errc::kTimeout) || s.is(Errc::kUnavailable) || s.is(Errc::kPermissionDenied) ||
         s.is(Errc::kResourceExhausted);
}

}  // namespace rdmq::producer
