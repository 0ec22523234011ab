// `rdmq partition inspect`: reads a partition directory's segment files and slot directly
// (read-only mappings; nothing is ever written, so it is safe next to a running broker) and
// reports every batch: position, offsets, timestamps, producer id/epoch/sequence, flags and
// whether its CRC verifies, with the exact segment, data-area position and file offset of every
// problem found. The formats are docs/storage-format.md's.
//
// Where a segment's committed bytes end:
//   * a sealed segment: its seal record's end position ("seal");
//   * the active segment named by a valid partition slot: the slot's committed position ("slot");
//   * otherwise (no slot, e.g. a log copied off a dead broker): the prefix of batches with valid
//     headers, CRCs and consecutive offsets, as recovery would find it ("scan"). Damage before the
//     newest checkpoint's position is a problem; damage after it is a torn tail recovery cuts off
//     (a note, not a problem).
// Problems: an unreadable or foreign file, a bad segment header, a malformed batch header, a CRC
// mismatch, a record that does not parse, offsets that do not continue, segments that do not
// chain. Notes: facts worth knowing that are not damage (bytes past the committed end, a torn
// tail, a slot that was never published, an unfinished truncation and the segments past it,
// which the broker's next open removes).
//
// Threading: pure function of the files. Errors (the Result): the path does not exist, cannot
// be read, or is neither a directory holding `*.seg` files nor a `.seg` file; damage inside the
// files is reported in the PartitionDump, not as an error.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "rdmq/common/status.h"

namespace rdmq::cli {

struct InspectOptions {
  bool records = false;            // keep every record (key, value, headers) for printing
  std::optional<int64_t> segment;  // only the segment with this base offset
};

struct RecordDump {
  int64_t offset = 0;
  int64_t timestamp_ms = 0;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

struct BatchDump {
  uint64_t position = 0;     // in the data area
  uint64_t file_offset = 0;  // 4096 + position
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  int32_t record_count = 0;
  uint64_t bytes = 0;
  int64_t base_timestamp_ms = 0;
  int64_t max_timestamp_ms = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t leader_epoch = -1;  // partitionLeaderEpoch: the epoch of the leader that took it (-1: none)
  int32_t base_sequence = -1;
  bool control = false;
  bool transactional = false;
  bool filler = false;
  std::string compression = "none";  // the codec of attributes bits 0-2 ("codec 5" for none known)
  bool crc_ok = false;
  uint32_t crc_stored = 0;
  uint32_t crc_computed = 0;
  std::vector<RecordDump> records;  // with InspectOptions::records
};

struct Problem {
  std::string file;          // segment or slot file name ("" for the directory)
  int64_t position = -1;     // data-area position, -1 when not about a position
  int64_t file_offset = -1;  // byte offset in the file, -1 when not about a position
  std::string message;
};

struct SegmentDump {
  std::string file;
  int64_t base_offset = 0;
  bool header_ok = false;  // false: nothing below is meaningful but `file` and `base_offset`
  uint64_t topic_id = 0;
  int32_t partition = 0;
  uint64_t capacity = 0;
  int64_t created_ms = 0;
  uint64_t reservation_word = 0;
  bool sealed = false;
  uint64_t seal_end = 0;
  int64_t seal_next_offset = 0;
  int64_t seal_max_timestamp_ms = 0;
  // An unfinished truncation (TruncateTo stopped by a crash after its commit point): the log is
  // being cut back to `truncation_end` of this segment; the broker's next open finishes it.
  bool truncating = false;
  uint64_t truncation_end = 0;
  int64_t truncation_next_offset = 0;
  bool has_checkpoint = false;
  uint64_t checkpoint_sequence = 0;
  uint64_t checkpoint_position = 0;
  int64_t checkpoint_next_offset = 0;
  std::string committed_from;  // "seal", "slot" or "scan"
  uint64_t committed_end = 0;
  int64_t next_offset = 0;        // offset after the last batch walked
  uint64_t nonzero_past_end = 0;  // bytes past the committed end that are not zero
  std::vector<BatchDump> batches;
};

struct PartitionDump {
  std::string path;
  bool has_slot = false;
  uint64_t slot_generation = 0;
  uint16_t slot_flags = 0;
  int64_t slot_active_segment = 0;
  uint64_t slot_committed_position = 0;
  int64_t slot_high_watermark = 0;
  int64_t slot_log_start = 0;
  uint64_t slot_capacity = 0;
  std::vector<SegmentDump> segments;
  std::vector<Problem> problems;
  std::vector<std::string> notes;
  uint64_t batches = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;  // committed bytes walked
};

// Inspects a partition directory, or a single `.seg` file.
Result<PartitionDump> InspectPartition(const std::string& path, const InspectOptions& options);

// Human-readable report: slot, then per segment its header facts and a table of batches (or,
// with `records`, each batch followed by its records), then problems, notes and a summary line.
void PrintInspectText(const PartitionDump& dump, bool records, std::ostream& os);
// The same as one JSON document (stable field names; see docs/cli.md).
std::string InspectToJson(const PartitionDump& dump, bool records);

}  // namespace rdmq::cli
