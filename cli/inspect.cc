#include "rdmq/cli/inspect.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "cli/inspect_internal.h"
#include "rdmq/cli/output.h"
#include "rdmq/common/coding.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::cli {

namespace fs = std::filesystem;
namespace fmt = storage::format;
using storage::BatchHeader;

namespace {

// A whole file mapped read-only (PROT_READ, MAP_SHARED: a running broker's commits stay
// visible, and nothing can ever be written through it).
class ReadOnlyFile {
 public:
  ReadOnlyFile() = default;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  ~ReadOnlyFile() {
    if (map_ != nullptr) munmap(map_, size_);
  }

  Status Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "stat " + path);
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* m = mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        size_ = 0;
        return Status::FromErrno(err, "mmap " + path);
      }
      map_ = static_cast<std::byte*>(m);
    }
    ::close(fd);
    return Status::Ok();
  }
  std::span<const std::byte> bytes() const { return {map_, size_}; }
  size_t size() const { return size_; }
  const std::byte* data() const { return map_; }

 private:
  std::byte* map_ = nullptr;
  size_t size_ = 0;
};

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

std::string ErrText(const Status& s) {
  const std::string_view ctx = s.context();
  return ctx.empty() ? s.code().message() : std::string(ctx) + ": " + s.code().message();
}

std::string AsString(std::span<const std::byte> s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

struct Walker {
  const InspectOptions& options;
  PartitionDump* dump;
  SegmentDump* seg;

  void AddProblem(uint64_t position, std::string message) {
    dump->problems.push_back(Problem{seg->file, static_cast<int64_t>(position),
                                     static_cast<int64_t>(fmt::kSegmentHeaderSize + position),
                                     std::move(message)});
  }

  // Decodes one batch at `pos` of `data` (the data area). Returns the batch size, or 0 when the
  // header is not a batch (then *why says so).
  size_t Decode(std::span<const std::byte> data, uint64_t pos, uint64_t limit, BatchHeader* h,
                std::string* why) {
    const auto bytes = data.subspan(pos, limit - pos);
    Status s = storage::DecodeBatchHeader(bytes, h);
    if (!s.ok()) {
      *why = "malformed batch header: " + std::string(s.context().empty() ? s.code().message() : s.context());
      return 0;
    }
    return h->total_size();
  }

  BatchDump Describe(const BatchHeader& h, std::span<const std::byte> batch, uint64_t pos) {
    BatchDump b;
    b.position = pos;
    b.file_offset = fmt::kSegmentHeaderSize + pos;
    b.base_offset = h.base_offset.value();
    b.last_offset = h.last_offset().value();
    b.record_count = h.record_count;
    b.bytes = h.total_size();
    b.base_timestamp_ms = h.base_timestamp.value();
    b.max_timestamp_ms = h.max_timestamp.value();
    b.producer_id = h.producer_id.value();
    b.producer_epoch = h.producer_epoch;
    b.leader_epoch = h.leader_epoch;
    b.base_sequence = h.base_sequence;
    b.control = h.is_control();
    b.transactional = h.is_transactional();
    b.filler = storage::IsFillerBatch(h);
    auto codec = compression::CodecFromId(h.compression());
    b.compression =
        codec.ok() ? std::string(compression::CodecName(*codec)) : "codec " + std::to_string(h.compression());
    b.crc_stored = h.crc;
    b.crc_computed = storage::ComputeBatchCrc(batch);
    b.crc_ok = b.crc_stored == b.crc_computed;
    return b;
  }

  // Walks the records of a batch whose CRC verified (decompressing them when compressed);
  // reports records that do not decompress or parse.
  void Records(const BatchHeader& h, std::span<const std::byte> batch, BatchDump* b) {
    std::string decompressed;
    storage::RecordIterator it(h, batch, &decompressed);
    storage::RecordView r;
    while (it.Next(&r)) {
      if (!options.records) continue;
      RecordDump rd;
      rd.offset = b->base_offset + r.offset_delta;
      rd.timestamp_ms = b->base_timestamp_ms + r.timestamp_delta;
      if (r.key) rd.key = AsString(*r.key);
      if (r.value) rd.value = AsString(*r.value);
      storage::HeaderIterator hi(r.headers, r.header_count);
      storage::HeaderView hv;
      while (hi.Next(&hv)) {
        std::optional<std::string> v;
        if (hv.value) v = AsString(*hv.value);
        rd.headers.emplace_back(AsString(hv.key), std::move(v));
      }
      b->records.push_back(std::move(rd));
    }
    if (!it.status().ok()) {
      AddProblem(b->position, "record " + std::to_string(it.index()) +
                                  " of the batch does not parse: " + std::string(it.status().context()));
    }
  }

  // Walks [0, end) of a segment whose committed end is known (seal or slot).
  void WalkCommitted(std::span<const std::byte> data, uint64_t end) {
    uint64_t pos = 0;
    int64_t expect = seg->base_offset;
    while (pos < end) {
      BatchHeader h;
      std::string why;
      const size_t size = Decode(data, pos, end, &h, &why);
      if (size == 0) {
        AddProblem(
            pos, why + "; the " + std::to_string(end - pos) + " committed bytes from here cannot be walked");
        break;
      }
      const auto batch = data.subspan(pos, size);
      BatchDump b = Describe(h, batch, pos);
      if (!b.crc_ok) {
        AddProblem(pos, "CRC mismatch in the batch at offset " + std::to_string(b.base_offset) + ": stored " +
                            Hex32(b.crc_stored) + ", computed " + Hex32(b.crc_computed) +
                            " over file bytes [" +
                            std::to_string(b.file_offset + storage::batch_field::kAttributes) + ", " +
                            std::to_string(b.file_offset + b.bytes) + ")");
      } else {
        Records(h, batch, &b);
      }
      if (b.base_offset != expect) {
        AddProblem(pos, "batch base offset " + std::to_string(b.base_offset) +
                            " does not continue the log (expected " + std::to_string(expect) + ")");
      }
      if (h.last_offset_delta != h.record_count - 1) {
        AddProblem(pos, "lastOffsetDelta " + std::to_string(h.last_offset_delta) +
                            " does not match the record count " + std::to_string(h.record_count));
      }
      expect = b.base_offset >= 0 ? b.last_offset + 1 : expect;
      dump->records += static_cast<uint64_t>(std::max(0, b.record_count));
      dump->bytes += b.bytes;
      seg->batches.push_back(std::move(b));
      pos += size;
    }
    seg->next_offset = expect;
  }

  // No committed end known: the prefix of valid, consecutive batches, as recovery finds it.
  void WalkScan(std::span<const std::byte> data) {
    const uint64_t durable = seg->has_checkpoint ? seg->checkpoint_position : 0;
    uint64_t pos = 0;
    int64_t expect = seg->base_offset;
    while (pos < data.size()) {
      const size_t head = std::min<size_t>(data.size() - pos, storage::kBatchHeaderSize);
      const auto first = data.subspan(pos, head);
      if (std::all_of(first.begin(), first.end(), [](std::byte b) { return b == std::byte{0}; })) break;
      BatchHeader h;
      std::string why;
      const size_t size = Decode(data, pos, data.size(), &h, &why);
      BatchDump b;
      if (size != 0) {
        b = Describe(h, data.subspan(pos, size), pos);
        if (!b.crc_ok) {
          why = "CRC mismatch: stored " + Hex32(b.crc_stored) + ", computed " + Hex32(b.crc_computed);
        } else if (b.base_offset != expect) {
          why = b.base_offset < 0
                    ? std::string("batch has no offsets assigned (baseOffset -1)")
                    : "batch base offset " + std::to_string(b.base_offset) +
                          " does not continue the log (expected " + std::to_string(expect) + ")";
        } else if (h.last_offset_delta != h.record_count - 1) {
          why = "lastOffsetDelta does not match the record count";
        }
      }
      if (!why.empty()) {
        if (pos < durable) {
          AddProblem(pos, why + " before the checkpointed position " + std::to_string(durable) +
                              " (durable data is damaged)");
        } else {
          dump->notes.push_back(seg->file + " position " + std::to_string(pos) + " (file offset " +
                                std::to_string(fmt::kSegmentHeaderSize + pos) + "): " + why +
                                "; recovery ends the log here (a torn or uncommitted tail)");
        }
        break;
      }
      Records(h, data.subspan(pos, size), &b);
      expect = b.last_offset + 1;
      dump->records += static_cast<uint64_t>(std::max(0, b.record_count));
      dump->bytes += b.bytes;
      seg->batches.push_back(std::move(b));
      pos += size;
    }
    seg->committed_end = pos;
    seg->next_offset = expect;
    if (pos < durable) {
      AddProblem(pos, "the valid batches end before the checkpointed position " + std::to_string(durable));
    }
  }
};

}  // namespace

void InspectSegmentBytes(std::span<const std::byte> file, const std::string& name, int64_t base,
                         const InspectOptions& options, PartitionDump* dump) {
  SegmentDump seg;
  seg.file = name;
  seg.base_offset = base;
  auto problem = [&](std::string message) {
    dump->problems.push_back(Problem{seg.file, -1, -1, std::move(message)});
  };
  if (file.size() < fmt::kSegmentHeaderSize) {
    problem("file is " + std::to_string(file.size()) + " bytes, shorter than the 4096-byte segment header");
    dump->segments.push_back(std::move(seg));
    return;
  }
  fmt::SegmentHeader hdr;
  if (Status s = fmt::DecodeSegmentHeader(file, &hdr); !s.ok()) {
    problem("bad segment header: " + std::string(s.context().empty() ? s.code().message() : s.context()));
    dump->segments.push_back(std::move(seg));
    return;
  }
  seg.header_ok = true;
  seg.topic_id = hdr.topic.value();
  seg.partition = hdr.partition.value();
  seg.capacity = hdr.capacity;
  seg.created_ms = hdr.created.value();
  seg.reservation_word = coding::LoadLE<uint64_t>(file.data() + fmt::kReservationWord);
  if (hdr.base_offset.value() != base) {
    problem("header base offset " + std::to_string(hdr.base_offset.value()) +
            " differs from the file name's " + std::to_string(base));
  }
  uint64_t capacity = hdr.capacity;
  if (file.size() < fmt::kSegmentHeaderSize + hdr.capacity) {
    problem("file is " + std::to_string(file.size()) + " bytes; the header's capacity needs " +
            std::to_string(fmt::kSegmentHeaderSize + hdr.capacity) + " (truncated)");
    capacity = file.size() - fmt::kSegmentHeaderSize;
  }
  const auto data = file.subspan(fmt::kSegmentHeaderSize, capacity);

  fmt::SealRecord seal;
  if (fmt::DecodeSealRecord(file.data() + fmt::kSealRecord, &seal)) {
    seg.sealed = true;
    seg.seal_end = seal.end.value();
    seg.seal_next_offset = seal.next_offset.value();
    seg.seal_max_timestamp_ms = seal.max_timestamp.value();
  }
  fmt::TruncationRecord cut;
  if (fmt::DecodeTruncationRecord(file.data() + fmt::kTruncationRecord, &cut)) {
    seg.truncating = true;
    seg.truncation_end = cut.end.value();
    seg.truncation_next_offset = cut.next_offset.value();
  }
  fmt::Checkpoint a, b;
  const bool va = fmt::DecodeCheckpoint(file.data() + fmt::kCheckpointA, &a);
  const bool vb = fmt::DecodeCheckpoint(file.data() + fmt::kCheckpointB, &b);
  if (va || vb) {
    const fmt::Checkpoint& c = (va && (!vb || a.sequence > b.sequence)) ? a : b;
    seg.has_checkpoint = true;
    seg.checkpoint_sequence = c.sequence;
    seg.checkpoint_position = c.committed.value();
    seg.checkpoint_next_offset = c.next_offset.value();
  }

  Walker w{options, dump, &seg};
  if (seg.sealed) {
    seg.committed_from = "seal";
    seg.committed_end = seg.seal_end;
    if (seg.seal_end > capacity) {
      w.AddProblem(seg.seal_end, "seal record's end position " + std::to_string(seg.seal_end) +
                                     " is past the data area (" + std::to_string(capacity) + " bytes)");
      seg.committed_end = capacity;
    }
    const size_t problems_before = dump->problems.size();
    w.WalkCommitted(data, seg.committed_end);
    if (seg.next_offset != seg.seal_next_offset && dump->problems.size() == problems_before) {
      w.AddProblem(seg.committed_end, "seal record says the next offset is " +
                                          std::to_string(seg.seal_next_offset) + ", the batches end at " +
                                          std::to_string(seg.next_offset));
    }
  } else if (dump->has_slot && dump->slot_active_segment == base) {
    seg.committed_from = "slot";
    seg.committed_end = std::min<uint64_t>(dump->slot_committed_position, capacity);
    if (dump->slot_committed_position > capacity) {
      w.AddProblem(dump->slot_committed_position, "the slot's committed position is past the data area");
    }
    w.WalkCommitted(data, seg.committed_end);
  } else {
    seg.committed_from = "scan";
    w.WalkScan(data);
  }
  // Bytes past the committed end: writes in progress (a live producer), or what a crash left.
  for (uint64_t p = seg.committed_end; p < data.size(); ++p) {
    if (data[p] != std::byte{0}) ++seg.nonzero_past_end;
  }
  if (seg.nonzero_past_end > 0 && seg.committed_from != "scan") {
    dump->notes.push_back(seg.file + ": " + std::to_string(seg.nonzero_past_end) +
                          " nonzero bytes past the committed end " + std::to_string(seg.committed_end) +
                          " (writes not yet committed, or left by a crash; consumers never read them)");
  }
  dump->batches += seg.batches.size();
  dump->segments.push_back(std::move(seg));
}

namespace {

void InspectSegment(const std::string& path, int64_t base, const InspectOptions& options,
                    PartitionDump* dump) {
  ReadOnlyFile f;
  const std::string name = fs::path(path).filename().string();
  if (Status s = f.Open(path); !s.ok()) {
    SegmentDump seg;
    seg.file = name;
    seg.base_offset = base;
    dump->problems.push_back(Problem{name, -1, -1, ErrText(s)});
    dump->segments.push_back(std::move(seg));
    return;
  }
  InspectSegmentBytes(f.bytes(), name, base, options, dump);
}

void ReadSlot(const std::string& path, PartitionDump* dump) {
  ReadOnlyFile f;
  if (Status s = f.Open(path); !s.ok()) {
    dump->problems.push_back(Problem{"partition.slot", -1, -1, ErrText(s)});
    return;
  }
  if (f.size() != fmt::kSlotFileSize) {
    dump->problems.push_back(Problem{
        "partition.slot", -1, -1,
        "file is " + std::to_string(f.size()) + " bytes, expected " + std::to_string(fmt::kSlotFileSize)});
    if (f.size() < fmt::kSlotSize) return;
  }
  auto slot = fmt::ReadPartitionSlot(f.data(), std::chrono::milliseconds(100));
  if (!slot.ok()) {
    const bool all_zero =
        std::all_of(f.data(), f.data() + fmt::kSlotSize, [](std::byte b) { return b == std::byte{0}; });
    const bool magic_only = coding::LoadLE<uint32_t>(f.data() + 8) == fmt::kSlotMagic;
    if (all_zero || (magic_only && slot.status().is(storage::StorageErrc::kCorruptHeader))) {
      dump->notes.push_back(
          "partition.slot holds no published state (the log has not been opened since it was "
          "created or since a power loss); committed ends come from scanning");
    } else {
      dump->problems.push_back(Problem{"partition.slot", -1, -1, ErrText(slot.status())});
    }
    return;
  }
  dump->has_slot = true;
  dump->slot_generation = slot->generation;
  dump->slot_flags = slot->flags;
  dump->slot_active_segment = slot->active_segment.value();
  dump->slot_committed_position = slot->committed_position.value();
  dump->slot_high_watermark = slot->high_watermark.value();
  dump->slot_log_start = slot->log_start_offset.value();
  dump->slot_capacity = slot->active_capacity;
}
}  // namespace

Result<PartitionDump> InspectPartition(const std::string& path, const InspectOptions& options) {
  PartitionDump dump;
  dump.path = path;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return Status::FromErrno(ENOENT, "partition inspect: " + path);
  }
  std::vector<std::pair<int64_t, std::string>> segments;
  if (fs::is_regular_file(st)) {
    Offset base;
    const std::string name = fs::path(path).filename().string();
    if (!fmt::ParseSegmentFileName(name, &base)) {
      return Status(Errc::kInvalidArgument, path +
                                                " is not a segment file (expected a name like "
                                                "00000000000000000000.seg) or a partition directory");
    }
    segments.emplace_back(base.value(), path);
  } else if (fs::is_directory(st)) {
    fs::directory_iterator it(path, ec);
    if (ec) return Status::FromErrno(ec.value(), "list " + path);
    for (const auto& e : it) {
      Offset base;
      if (fmt::ParseSegmentFileName(e.path().filename().string(), &base))
        segments.emplace_back(base.value(), e.path().string());
    }
    if (segments.empty()) {
      return Status(Errc::kNotFound,
                    path + " holds no segment files (<20-digit base offset>.seg): not a partition directory");
    }
    const std::string slot = (fs::path(path) / "partition.slot").string();
    if (fs::exists(slot, ec)) {
      ReadSlot(slot, &dump);
    } else {
      dump.notes.push_back("no partition.slot: committed ends come from scanning");
    }
  } else {
    return Status(Errc::kInvalidArgument, path + " is neither a directory nor a segment file");
  }
  std::sort(segments.begin(), segments.end());
  bool past_cut = false;  // an earlier segment holds an unfinished truncation
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& [base, file] = segments[i];
    if (options.segment && *options.segment != base) continue;
    InspectSegment(file, base, options, &dump);
    const SegmentDump& seg = dump.segments.back();
    if (past_cut) {
      dump.notes.push_back(seg.file + " is past an unfinished truncation: the broker's next open deletes it");
      continue;
    }
    if (!seg.header_ok || options.segment) continue;
    if (seg.truncating) {
      // The chain ends here once the truncation is finished; what follows is left over.
      dump.notes.push_back(seg.file + " holds an unfinished truncation to position " +
                           std::to_string(seg.truncation_end) + " (next offset " +
                           std::to_string(seg.truncation_next_offset) +
                           "): the broker's next open finishes it");
      past_cut = true;
      continue;
    }
    if (i + 1 < segments.size()) {
      if (!seg.sealed) {
        dump.problems.push_back(
            Problem{seg.file, -1, -1, "segment is not sealed, yet a later segment exists"});
      } else if (seg.seal_next_offset != segments[i + 1].first) {
        dump.problems.push_back(Problem{seg.file, -1, -1,
                                        "seal record's next offset " + std::to_string(seg.seal_next_offset) +
                                            " is not the next segment's base offset " +
                                            std::to_string(segments[i + 1].first)});
      }
    }
  }
  if (options.segment && dump.segments.empty()) {
    return Status(Errc::kNotFound,
                  "no segment with base offset " + std::to_string(*options.segment) + " in " + path);
  }
  return dump;
}

namespace {

std::string Flags(const BatchDump& b) {
  std::string f;
  if (b.filler) {
    f = "filler";
  } else if (b.control) {
    f = "control";
  }
  if (b.transactional && !b.filler) f += f.empty() ? "txn" : ",txn";
  if (b.compression != "none") f += (f.empty() ? "" : ",") + b.compression;
  return f.empty() ? "-" : f;
}

std::string Where(const Problem& p) {
  std::string w = p.file.empty() ? std::string("partition") : p.file;
  if (p.position >= 0) {
    w += " position " + std::to_string(p.position) + " (file offset " + std::to_string(p.file_offset) + ")";
  }
  return w;
}

}  // namespace

void PrintInspectText(const PartitionDump& d, bool records, std::ostream& os) {
  os << "partition " << d.path << "\n";
  if (d.has_slot) {
    os << "  slot: generation " << d.slot_generation << ", active segment " << d.slot_active_segment
       << ", committed position " << d.slot_committed_position << ", high watermark " << d.slot_high_watermark
       << ", log start " << d.slot_log_start;
    if (d.slot_flags & fmt::kSlotSealed) os << ", sealed";
    if (d.slot_flags & fmt::kSlotClosed) os << ", closed";
    os << "\n";
  }
  for (const SegmentDump& s : d.segments) {
    os << "\nsegment " << s.file;
    if (!s.header_ok) {
      os << ": unreadable (see problems)\n";
      continue;
    }
    os << ": base offset " << s.base_offset << ", topic id " << s.topic_id << ", partition " << s.partition
       << ", capacity " << s.capacity << " (" << FormatBytes(s.capacity) << "), created "
       << FormatTimestampMs(s.created_ms) << "\n";
    os << "  committed end " << s.committed_end << " (from the " << s.committed_from << "), next offset "
       << s.next_offset << ", reservation word " << s.reservation_word << "\n";
    os << "  seal: ";
    if (s.sealed) {
      os << "end " << s.seal_end << ", next offset " << s.seal_next_offset << "\n";
    } else {
      os << "none (active segment)\n";
    }
    if (s.truncating) {
      os << "  truncation: unfinished, to end " << s.truncation_end << ", next offset "
         << s.truncation_next_offset << " (the broker's next open finishes it)\n";
    }
    os << "  checkpoint: ";
    if (s.has_checkpoint) {
      os << "#" << s.checkpoint_sequence << " at position " << s.checkpoint_position << ", next offset "
         << s.checkpoint_next_offset << "\n";
    } else {
      os << "none\n";
    }
    if (s.batches.empty()) {
      os << "  (no batches)\n";
      continue;
    }
    if (!records) {
      Table t({"POSITION", "OFFSETS", "RECORDS", "BYTES", "FIRST TIMESTAMP", "MAX TIMESTAMP", "PRODUCER",
               "EPOCH", "SEQ", "LEADER EPOCH", "FLAGS", "CRC"},
              {Align::kRight, Align::kLeft, Align::kRight, Align::kRight, Align::kLeft, Align::kLeft,
               Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kLeft, Align::kLeft});
      for (const BatchDump& b : s.batches) {
        t.AddRow(
            {std::to_string(b.position), std::to_string(b.base_offset) + ".." + std::to_string(b.last_offset),
             std::to_string(b.record_count), std::to_string(b.bytes), FormatTimestampMs(b.base_timestamp_ms),
             FormatTimestampMs(b.max_timestamp_ms), std::to_string(b.producer_id),
             std::to_string(b.producer_epoch), std::to_string(b.base_sequence),
             std::to_string(b.leader_epoch), Flags(b), b.crc_ok ? "ok" : "MISMATCH"});
      }
      std::ostringstream table;
      t.Print(table);
      std::string line;
      std::istringstream in(table.str());
      while (std::getline(in, line)) os << "  " << line << "\n";
      continue;
    }
    for (const BatchDump& b : s.batches) {
      os << "  batch at position " << b.position << ": offsets " << b.base_offset << ".." << b.last_offset
         << ", " << b.record_count << " records, " << b.bytes << " bytes, timestamps "
         << FormatTimestampMs(b.base_timestamp_ms) << " .. " << FormatTimestampMs(b.max_timestamp_ms)
         << ", producer " << b.producer_id << " epoch " << b.producer_epoch << " seq " << b.base_sequence
         << ", leader epoch " << b.leader_epoch << ", flags " << Flags(b) << ", CRC "
         << (b.crc_ok ? "ok" : "MISMATCH") << "\n";
      for (const RecordDump& r : b.records) {
        os << "    offset " << r.offset << "  " << FormatTimestampMs(r.timestamp_ms) << "  key "
           << Printable(r.key, 64) << "  value " << Printable(r.value, 200);
        if (!r.headers.empty()) {
          os << "  headers";
          for (const auto& [k, v] : r.headers) os << " " << Printable(k, 64) << "=" << Printable(v, 64);
        }
        os << "\n";
      }
    }
  }
  if (!d.notes.empty()) {
    os << "\nnotes:\n";
    for (const auto& n : d.notes) os << "  " << n << "\n";
  }
  if (!d.problems.empty()) {
    os << "\nPROBLEMS:\n";
    for (const auto& p : d.problems) os << "  " << Where(p) << ": " << p.message << "\n";
  }
  os << "\n"
     << d.segments.size() << " segment" << (d.segments.size() == 1 ? "" : "s") << ", " << d.batches
     << " batches, " << d.records << " records, " << d.bytes << " bytes; ";
  if (d.problems.empty()) {
    os << "every CRC verified, no problems\n";
  } else {
    os << d.problems.size() << " problem" << (d.problems.size() == 1 ? "" : "s") << "\n";
  }
}

std::string InspectToJson(const PartitionDump& d, bool records) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["path"] = SanitizeUtf8(d.path);
  if (d.has_slot) {
    j["slot"] = {{"generation", d.slot_generation},
                 {"active_segment", d.slot_active_segment},
                 {"committed_position", d.slot_committed_position},
                 {"high_watermark", d.slot_high_watermark},
                 {"log_start_offset", d.slot_log_start},
                 {"capacity", d.slot_capacity},
                 {"sealed", (d.slot_flags & fmt::kSlotSealed) != 0},
                 {"closed", (d.slot_flags & fmt::kSlotClosed) != 0}};
  } else {
    j["slot"] = nullptr;
  }
  ordered_json segs = ordered_json::array();
  for (const SegmentDump& s : d.segments) {
    ordered_json js;
    js["file"] = s.file;
    js["base_offset"] = s.base_offset;
    js["header_ok"] = s.header_ok;
    if (s.header_ok) {
      js["topic_id"] = s.topic_id;
      js["partition"] = s.partition;
      js["capacity"] = s.capacity;
      js["created_ms"] = s.created_ms;
      js["reservation_word"] = s.reservation_word;
      js["sealed"] = s.sealed;
      js["seal"] = s.sealed ? ordered_json{{"end", s.seal_end},
                                           {"next_offset", s.seal_next_offset},
                                           {"max_timestamp_ms", s.seal_max_timestamp_ms}}
                            : ordered_json(nullptr);
      js["truncation"] =
          s.truncating ? ordered_json{{"end", s.truncation_end}, {"next_offset", s.truncation_next_offset}}
                       : ordered_json(nullptr);
      js["checkpoint"] = s.has_checkpoint ? ordered_json{{"sequence", s.checkpoint_sequence},
                                                         {"position", s.checkpoint_position},
                                                         {"next_offset", s.checkpoint_next_offset}}
                                          : ordered_json(nullptr);
      js["committed_end"] = s.committed_end;
      js["committed_from"] = s.committed_from;
      js["next_offset"] = s.next_offset;
      js["nonzero_bytes_past_end"] = s.nonzero_past_end;
      ordered_json batches = ordered_json::array();
      for (const BatchDump& b : s.batches) {
        ordered_json jb;
        jb["position"] = b.position;
        jb["file_offset"] = b.file_offset;
        jb["base_offset"] = b.base_offset;
        jb["last_offset"] = b.last_offset;
        jb["records"] = b.record_count;
        jb["bytes"] = b.bytes;
        jb["base_timestamp_ms"] = b.base_timestamp_ms;
        jb["max_timestamp_ms"] = b.max_timestamp_ms;
        jb["producer_id"] = b.producer_id;
        jb["producer_epoch"] = b.producer_epoch;
        jb["base_sequence"] = b.base_sequence;
        jb["leader_epoch"] = b.leader_epoch;
        jb["control"] = b.control;
        jb["transactional"] = b.transactional;
        jb["filler"] = b.filler;
        jb["compression"] = b.compression;
        jb["crc_ok"] = b.crc_ok;
        jb["crc_stored"] = b.crc_stored;
        jb["crc_computed"] = b.crc_computed;
        if (records) {
          ordered_json rs = ordered_json::array();
          for (const RecordDump& r : b.records) {
            ordered_json jr;
            jr["offset"] = r.offset;
            jr["timestamp_ms"] = r.timestamp_ms;
            jr["key"] = r.key ? ordered_json(SanitizeUtf8(*r.key)) : ordered_json(nullptr);
            jr["value"] = r.value ? ordered_json(SanitizeUtf8(*r.value)) : ordered_json(nullptr);
            ordered_json hs = ordered_json::array();
            for (const auto& [k, v] : r.headers) {
              hs.push_back({{"key", SanitizeUtf8(k)},
                            {"value", v ? ordered_json(SanitizeUtf8(*v)) : ordered_json(nullptr)}});
            }
            jr["headers"] = std::move(hs);
            rs.push_back(std::move(jr));
          }
          jb["record_list"] = std::move(rs);
        }
        batches.push_back(std::move(jb));
      }
      js["batches"] = std::move(batches);
    }
    segs.push_back(std::move(js));
  }
  j["segments"] = std::move(segs);
  ordered_json problems = ordered_json::array();
  for (const Problem& p : d.problems) {
    problems.push_back(
        {{"file", p.file},
         {"position", p.position >= 0 ? ordered_json(p.position) : ordered_json(nullptr)},
         {"file_offset", p.file_offset >= 0 ? ordered_json(p.file_offset) : ordered_json(nullptr)},
         {"message", SanitizeUtf8(p.message)}});
  }
  j["problems"] = std::move(problems);
  j["notes"] = d.notes;
  j["summary"] = {{"segments", d.segments.size()},
                  {"batches", d.batches},
                  {"records", d.records},
                  {"bytes", d.bytes},
                  {"problems", d.problems.size()}};
  return j.dump(2);
}

}  // namespace rdmq::cli
