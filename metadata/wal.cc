#include "metadata/wal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "rdmq/common/coding.h"
#include "rdmq/common/crc32c.h"
#include "rdmq/metadata/topic.h"

namespace rdmq::metadata::wal {

// The record layout of docs/metadata-format.md ("Log record"): u32 length at 0, u32 CRC at 4,
// u64 sequence at 8, payload at 16, back to back.
static_assert(kLengthAt == 0 && kCrcAt == kLengthAt + 4 && kCrcAt == 4);
static_assert(kSeqAt == kCrcAt + 4 && kSeqAt == 8);
static_assert(kHeaderSize == kSeqAt + 8 && kHeaderSize == 16);

std::string EncodeRecord(uint64_t seq, std::string_view payload) {
  std::string out;
  out.reserve(kHeaderSize + payload.size());
  coding::Writer w(&out);
  w.LE<uint32_t>(static_cast<uint32_t>(payload.size()));
  w.LE<uint32_t>(0);  // CRC, filled below
  w.LE<uint64_t>(seq);
  w.Bytes(payload);
  const uint32_t crc = crc32c::Value(out.data() + kSeqAt, out.size() - kSeqAt);
  coding::StoreLE<uint32_t>(out.data() + kCrcAt, crc);
  return out;
}

Result<ReplayResult> DecodeLog(std::string_view bytes, const std::string& name) {
  ReplayResult r;
  r.file_bytes = bytes.size();
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t left = bytes.size() - pos;
    if (left < kHeaderSize) break;  // torn header
    const uint32_t len = coding::LoadLE<uint32_t>(bytes.data() + pos + kLengthAt);
    const uint32_t crc = coding::LoadLE<uint32_t>(bytes.data() + pos + kCrcAt);
    if (len > kMaxPayload || len > left - kHeaderSize) {
      // Either torn (the write of this record never finished) or a garbage length. It is torn
      // only if nothing but zeros could follow, which an incomplete final append guarantees.
      if (len <= kMaxPayload) break;
      const bool zeros =
          std::all_of(bytes.begin() + static_cast<long>(pos), bytes.end(), [](char c) { return c == 0; });
      if (zeros) break;
      return Status(MetadataErrc::kCorruptLog, name + ": record at byte " + std::to_string(pos) +
                                                   " declares " + std::to_string(len) + " bytes");
    }
    const size_t end = pos + kHeaderSize + len;
    if (crc32c::Value(bytes.data() + pos + kSeqAt, kHeaderSize - kSeqAt + len) != crc) {
      const bool rest_zero =
          std::all_of(bytes.begin() + static_cast<long>(end), bytes.end(), [](char c) { return c == 0; });
      if (end == bytes.size() || rest_zero) break;  // torn final record
      return Status(MetadataErrc::kCorruptLog, name + ": CRC mismatch in record at byte " +
                                                   std::to_string(pos) + " with more records after it");
    }
    r.records.push_back({coding::LoadLE<uint64_t>(bytes.data() + pos + kSeqAt),
                         std::string(bytes.substr(pos + kHeaderSize, len))});
    pos = end;
  }
  r.valid_bytes = pos;
  return r;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<ReplayResult> Replay(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0) return ReplayResult{};
  RDMQ_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  return DecodeLog(bytes, path);
}

Result<int> OpenForAppend(const std::string& path, uint64_t valid_bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size >= 0 && static_cast<uint64_t>(size) > valid_bytes) {
    if (::ftruncate(fd, static_cast<off_t>(valid_bytes)) != 0 || ::fdatasync(fd) != 0) {
      const int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "cut torn tail of " + path);
    }
  }
  return fd;
}

}  // namespace rdmq::metadata::wal
