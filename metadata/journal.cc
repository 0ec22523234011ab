#include "metadata/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "metadata/wal.h"
#include "rdmq/common/log.h"
#include "rdmq/metadata/topic.h"

namespace rdmq::metadata::internal {
namespace {

Status WriteAll(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t w = ::write(fd, bytes.data(), bytes.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "write " + what);
    }
    bytes.remove_prefix(static_cast<size_t>(w));
  }
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open directory " + dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno(err, "fsync directory " + dir);
  return Status::Ok();
}

}  // namespace

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Status Journal::Open(const LoadCheckpoint& load, const ApplyRecord& apply) {
  if (files_.dir.empty()) return Status(Errc::kInvalidArgument, "a journal needs a directory");
  std::error_code ec;
  std::filesystem::create_directories(files_.dir, ec);
  if (ec) return Status(ec, "create directory " + files_.dir);
  const std::string ckpt = checkpoint_path();
  const std::string log = log_path();
  if (std::filesystem::exists(ckpt)) {
    RDMQ_ASSIGN_OR_RETURN(std::string text, wal::ReadWholeFile(ckpt));
    RDMQ_ASSIGN_OR_RETURN(seq_, load(text, ckpt));
  }
  // Replay the log; everything is validated before a torn tail is cut.
  RDMQ_ASSIGN_OR_RETURN(wal::ReplayResult replay, wal::Replay(log));
  uint32_t applied = 0;
  for (const auto& rec : replay.records) {
    if (rec.seq <= seq_) continue;  // already in the checkpoint
    if (rec.seq != seq_ + 1) {
      return Status(MetadataErrc::kCorruptLog, log + ": record sequence " + std::to_string(rec.seq) +
                                                   " follows " + std::to_string(seq_));
    }
    RDMQ_RETURN_IF_ERROR(apply(rec.payload, log, rec.seq));
    seq_ = rec.seq;
    ++applied;
  }
  RDMQ_ASSIGN_OR_RETURN(fd_, wal::OpenForAppend(log, replay.valid_bytes));
  if (replay.valid_bytes != replay.file_bytes) {
    RDMQ_LOG(kWarn, "metadata", "cut torn tail of log")
        .kv("file", log)
        .kv("valid_bytes", replay.valid_bytes)
        .kv("file_bytes", replay.file_bytes);
  }
  since_checkpoint_ = applied;
  return Status::Ok();
}

Result<uint64_t> Journal::Append(std::string_view payload) {
  const uint64_t seq = seq_ + 1;
  const std::string rec = wal::EncodeRecord(seq, payload);
  RDMQ_RETURN_IF_ERROR(WriteAll(fd_, rec, log_path()));
  if (files_.sync && ::fdatasync(fd_) != 0) return Status::FromErrno(errno, "fdatasync " + log_path());
  seq_ = seq;
  ++since_checkpoint_;
  return seq;
}

Status Journal::WriteCheckpoint(std::string_view text) {
  const std::string path = checkpoint_path();
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  Status s = WriteAll(fd, text, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = Status::FromErrno(errno, "fsync " + tmp);
  ::close(fd);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::FromErrno(errno, "rename " + tmp + " to " + path);
  RDMQ_RETURN_IF_ERROR(SyncDir(files_.dir));
  // The checkpoint now covers every logged record; records left behind by a crash before this
  // truncation are skipped on replay by their sequence numbers.
  if (::ftruncate(fd_, 0) != 0) return Status::FromErrno(errno, "truncate " + log_path());
  if (::lseek(fd_, 0, SEEK_SET) < 0) return Status::FromErrno(errno, "seek " + log_path());
  since_checkpoint_ = 0;
  return Status::Ok();
}

}  // namespace rdmq::metadata::internal
