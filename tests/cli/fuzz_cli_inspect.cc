// libFuzzer target: partition inspection over arbitrary segment bytes. The input's first byte
// chooses how the segment is framed:
//   bit 0: a seal record (end position from the next 4 bytes)
//   bit 1: a checkpoint (position from the next 4 bytes)
//   bit 2: a partition slot naming this segment (committed position from the next 4 bytes)
//   bit 3: keep records (--records) and render them
//   bit 4: the rest is the whole file, header included (exercises header checks)
//   bit 5: the rest is turned into valid consecutive batches first, then one byte is flipped
// Properties beyond "no crash, no sanitizer report": batches are reported in position order,
// back to back from 0, never past the committed end; a problem names a position inside the data
// area (or none); the text and JSON renderings succeed and the JSON parses.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/inspect_internal.h"
#include "rdmq/common/coding.h"
#include "rdmq/storage/format.h"
#include "rdmq/storage/record_batch.h"

using namespace rdmq;
namespace fmt = rdmq::storage::format;

namespace {

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fuzz_cli_inspect: property violated: %s\n", what);
  std::abort();
}

uint32_t Take32(const uint8_t*& p, size_t& n) {
  uint32_t v = 0;
  for (int i = 0; i < 4 && n > 0; ++i, ++p, --n) v |= uint32_t{*p} << (8 * i);
  return v;
}

// Valid batches built from the input: chunks of up to 40 bytes become record values.
std::string Synthesize(const uint8_t* p, size_t n, int64_t base) {
  std::string out;
  int64_t next = base;
  size_t i = 0;
  while (i < n && out.size() < 16384) {
    const size_t records = 1 + p[i] % 4;
    std::vector<std::string> values;
    for (size_t r = 0; r < records && i < n; ++r) {
      const size_t len = std::min<size_t>(n - i, p[i] % 40);
      values.emplace_back(reinterpret_cast<const char*>(p + i), len);
      i += len + 1;
    }
    std::vector<storage::RecordInput> in;
    for (const auto& v : values) in.push_back({std::nullopt, v, {}, TimestampMs(1700000000000 + next)});
    storage::BatchOptions bo;
    bo.base_offset = Offset(next);
    out += storage::EncodeBatch(bo, in);
    next += static_cast<int64_t>(in.size());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const uint8_t* p = data + 1;
  size_t n = size - 1;
  const uint32_t seal_end = (mode & 1) ? Take32(p, n) : 0;
  const uint32_t checkpoint = (mode & 2) ? Take32(p, n) : 0;
  const uint32_t slot_pos = (mode & 4) ? Take32(p, n) : 0;
  const int64_t base = 100;

  std::vector<std::byte> file;
  if (mode & 16) {
    file.assign(reinterpret_cast<const std::byte*>(p), reinterpret_cast<const std::byte*>(p) + n);
  } else {
    std::string area;
    if (mode & 32) {
      const uint32_t flip = Take32(p, n);
      area = Synthesize(p, n, base);
      if (!area.empty() && (flip & 0x80000000u))
        area[flip % area.size()] ^= static_cast<char>(1 + (flip >> 24) % 255);
    } else {
      area.assign(reinterpret_cast<const char*>(p), n);
    }
    file.resize(fmt::kSegmentHeaderSize + area.size());
    fmt::SegmentHeader h;
    h.topic = TopicId(1);
    h.partition = PartitionId(0);
    h.base_offset = Offset(base);
    h.capacity = area.size();
    h.created = TimestampMs(1700000000000);
    fmt::EncodeSegmentHeader(h, file.data());
    std::memcpy(file.data() + fmt::kSegmentHeaderSize, area.data(), area.size());
    if (mode & 1) {
      fmt::SealRecord s;
      s.end = Position(area.empty() ? 0 : seal_end % (area.size() + 1));
      s.next_offset = Offset(base + 1 + seal_end % 50);
      fmt::EncodeSealRecord(s, file.data() + fmt::kSealRecord);
    }
    if (mode & 2) {
      fmt::Checkpoint c;
      c.sequence = 1;
      c.committed = Position(area.empty() ? 0 : checkpoint % (area.size() + 1));
      c.next_offset = Offset(base + checkpoint % 50);
      fmt::EncodeCheckpoint(c, file.data() + fmt::kCheckpointA);
    }
  }

  cli::PartitionDump dump;
  dump.path = "fuzz";
  if (mode & 4) {
    dump.has_slot = true;
    dump.slot_active_segment = base;
    dump.slot_committed_position = slot_pos % (n + 1);
  }
  cli::InspectOptions options;
  options.records = (mode & 8) != 0;
  cli::InspectSegmentBytes(file, fmt::SegmentFileName(Offset(base)), base, options, &dump);

  if (dump.segments.size() != 1) Violation("one segment in, one segment out");
  const cli::SegmentDump& seg = dump.segments[0];
  const uint64_t area = file.size() >= fmt::kSegmentHeaderSize ? file.size() - fmt::kSegmentHeaderSize : 0;
  uint64_t expect_pos = 0;
  for (const auto& b : seg.batches) {
    if (b.position != expect_pos) Violation("batches are not back to back from position 0");
    if (b.file_offset != b.position + fmt::kSegmentHeaderSize) Violation("file offset != 4096 + position");
    expect_pos += b.bytes;
  }
  if (seg.header_ok && expect_pos > seg.committed_end) Violation("a batch runs past the committed end");
  if (seg.header_ok && seg.committed_end > area) Violation("committed end past the data area");
  for (const auto& pr : dump.problems) {
    if (pr.position >= 0 &&
        static_cast<uint64_t>(pr.position) > std::max<uint64_t>(area, seg.committed_end) &&
        pr.message.find("past the data area") == std::string::npos &&
        pr.message.find("seal record") == std::string::npos) {
      Violation("a problem's position lies outside the segment");
    }
  }
  std::ostringstream text;
  cli::PrintInspectText(dump, options.records, text);
  if (text.str().empty()) Violation("empty text report");
  const auto j = nlohmann::json::parse(cli::InspectToJson(dump, options.records), nullptr, false);
  if (j.is_discarded()) Violation("JSON report does not parse");
  return 0;
}
