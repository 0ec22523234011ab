// Internal: a write-ahead log plus a checkpoint file in one directory, the durability engine of
// MetadataStore and OffsetStore (docs/metadata-format.md). The owner keeps its state in memory and
// decides what the records and the checkpoint say; the journal frames records (wal.h), makes each
// one durable before Append returns, replays them at Open, writes checkpoints atomically (temp
// file, fsync, rename, directory fsync) and then truncates the log.
// Not thread-safe: the owner guards it with the same mutex as its state.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "rdmq/common/status.h"

namespace rdmq::metadata::internal {

struct JournalFiles {
  std::string dir;              // created if missing
  std::string log_name;         // e.g. "metadata.wal"
  std::string checkpoint_name;  // e.g. "metadata.json"
  uint32_t checkpoint_every = 64;
  bool sync = true;  // fdatasync every append
};

class Journal {
 public:
  // Loads the checkpoint's text (returns the sequence number it covers).
  using LoadCheckpoint = std::function<Result<uint64_t>(std::string_view text, const std::string& path)>;
  // Applies one log record newer than the checkpoint, in sequence order.
  using ApplyRecord = std::function<Status(std::string_view payload, const std::string& log, uint64_t seq)>;

  explicit Journal(JournalFiles files) : files_(std::move(files)) {}
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Loads the checkpoint (if any) and replays the log. Nothing is modified unless everything
  // decoded and applied: then a torn tail is cut off and the log opened for appending.
  Status Open(const LoadCheckpoint& load, const ApplyRecord& apply);
  // Appends one record and (with sync) fdatasyncs it. Returns its sequence number; the owner
  // applies the change only after this succeeded.
  Result<uint64_t> Append(std::string_view payload);
  // True when `checkpoint_every` records were appended since the last checkpoint.
  bool checkpoint_due() const noexcept { return since_checkpoint_ >= files_.checkpoint_every; }
  // Writes `text` (the owner's whole state as of seq()) as the checkpoint and truncates the log.
  Status WriteCheckpoint(std::string_view text);
  uint64_t seq() const noexcept { return seq_; }
  std::string log_path() const { return files_.dir + "/" + files_.log_name; }
  std::string checkpoint_path() const { return files_.dir + "/" + files_.checkpoint_name; }

 private:
  const JournalFiles files_;
  int fd_ = -1;
  uint64_t seq_ = 0;
  uint32_t since_checkpoint_ = 0;
};

}  // namespace rdmq::metadata::internal
