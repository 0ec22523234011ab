// Compressed record batches (record_batch.h, docs/storage-format.md "Compression"): the records
// of a batch whose attributes name a codec are one compressed block after the 61-byte header.
// Reading them (BatchRecords) and compressing a finished batch (CompressedBatch,
// CompressBatchInPlace).
#include <cstring>
#include <string>

#include "rdmq/common/coding.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::storage {

namespace bf = batch_field;
using coding::StoreBE;

namespace {

// The header of a complete, uncompressed batch that a codec is about to be applied to.
Status CheckPlain(std::span<const std::byte> batch, compression::Codec codec, int level, BatchHeader* h) {
  RDMQ_RETURN_IF_ERROR(DecodeBatchHeader(batch, h));
  if (h->total_size() != batch.size()) {
    return Status(Errc::kInvalidArgument, "the batch is " + std::to_string(h->total_size()) +
                                              " bytes, not the " + std::to_string(batch.size()) + " given");
  }
  RDMQ_RETURN_IF_ERROR(VerifyBatchCrc(*h, batch));
  if (h->is_compressed()) {
    return Status(Errc::kInvalidArgument,
                  "the batch is already compressed (codec " + std::to_string(h->compression()) + ")");
  }
  if (codec == compression::Codec::kNone) return Status(Errc::kInvalidArgument, "compression codec none");
  return compression::CheckLevel(codec, level);
}

// Writes the header fields a codec changes: attributes, batchLength, CRC.
void FinishCompressed(std::byte* p, size_t size, int16_t attributes, compression::Codec codec) {
  const auto attrs = static_cast<int16_t>((attributes & ~kAttrCompressionMask) | static_cast<int16_t>(codec));
  StoreBE<int16_t>(p + bf::kAttributes, attrs);
  StoreBE<int32_t>(p + bf::kBatchLength, static_cast<int32_t>(size - kBatchLengthOverhead));
  StoreBE<uint32_t>(p + bf::kCrc, ComputeBatchCrc({p, size}));
}

}  // namespace

Result<std::span<const std::byte>> BatchRecords(const BatchHeader& h, std::span<const std::byte> batch,
                                                std::string* buffer, size_t max_decompressed) {
  if (batch.size() < h.total_size() || h.total_size() < kBatchHeaderSize) {
    return Status(StorageErrc::kMalformedBatch, "batch of " + std::to_string(h.total_size()) + " bytes, " +
                                                    std::to_string(batch.size()) + " available");
  }
  const auto records = batch.subspan(kBatchHeaderSize, h.total_size() - kBatchHeaderSize);
  if (!h.is_compressed()) return records;
  auto codec = compression::CodecFromId(h.compression());
  if (!codec.ok()) {
    return Status(StorageErrc::kUnsupportedBatch, "attributes name compression codec " +
                                                      std::to_string(h.compression()) +
                                                      "; Kafka defines 1 gzip, 2 snappy, 3 lz4, 4 zstd");
  }
  const Status s = compression::DecompressInto(*codec, records, max_decompressed, buffer);
  if (!s.ok()) {
    return Status(StorageErrc::kMalformedBatch,
                  "the " + std::to_string(records.size()) +
                      " bytes of compressed records do not decompress: " +
                      std::string(s.context().empty() ? s.code().message() : s.context()));
  }
  return coding::AsBytes(*buffer);
}

Result<std::string> CompressedBatch(std::span<const std::byte> batch, compression::Codec codec, int level) {
  BatchHeader h;
  RDMQ_RETURN_IF_ERROR(CheckPlain(batch, codec, level, &h));
  RDMQ_ASSIGN_OR_RETURN(std::string records,
                        compression::Compress(codec, batch.subspan(kBatchHeaderSize), level));
  std::string out(kBatchHeaderSize + records.size(), '\0');
  std::memcpy(out.data(), batch.data(), kBatchHeaderSize);
  std::memcpy(out.data() + kBatchHeaderSize, records.data(), records.size());
  if (out.size() > kMaxBatchBytes) {
    return Status(Errc::kInvalidArgument,
                  "the compressed batch of " + std::to_string(out.size()) + " bytes exceeds the 1 GiB limit");
  }
  FinishCompressed(reinterpret_cast<std::byte*>(out.data()), out.size(), h.attributes, codec);
  return out;
}

Result<size_t> CompressBatchInPlace(std::span<std::byte> batch, compression::Codec codec, int level) {
  BatchHeader h;
  RDMQ_RETURN_IF_ERROR(CheckPlain(batch, codec, level, &h));
  RDMQ_ASSIGN_OR_RETURN(std::string records,
                        compression::Compress(codec, batch.subspan(kBatchHeaderSize), level));
  const size_t size = kBatchHeaderSize + records.size();
  if (size >= batch.size()) return batch.size();
  std::memcpy(batch.data() + kBatchHeaderSize, records.data(), records.size());
  FinishCompressed(batch.data(), size, h.attributes, codec);
  return size;
}

}  // namespace rdmq::storage
