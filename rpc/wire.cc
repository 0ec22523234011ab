#include "rpc/wire.h"

#include <string>

#include "rdmq/rpc/errors.h"

namespace rdmq::rpc {

using coding::LoadLE;
using coding::StoreLE;

std::byte* MessageBuilder::Add(const EntryMeta& meta) noexcept {
  std::byte* m = out_ + used_;
  StoreLE<uint32_t>(m + 0, meta.size);
  StoreLE<uint16_t>(m + 4, meta.handler);
  StoreLE<uint16_t>(m + 6, meta.status);
  StoreLE<uint32_t>(m + 8, meta.thread);
  StoreLE<uint32_t>(m + 12, meta.seq);
  std::byte* data = m + kMetaSize;
  const uint64_t padded = AlignUp(meta.size, kDataAlign);
  if (padded != meta.size) std::memset(data + meta.size, 0, padded - meta.size);
  used_ += static_cast<uint32_t>(kMetaSize + padded);
  ++count_;
  return data;
}

namespace {

void StoreHeader(std::byte* out, const MessageHeader& h) noexcept {
  StoreLE<uint64_t>(out + 0, h.canary);
  StoreLE<uint16_t>(out + 8, kMagic);
  StoreLE<uint8_t>(out + 10, kVersion);
  StoreLE<uint8_t>(out + 11, h.flags);
  StoreLE<uint32_t>(out + 12, h.length);
  StoreLE<uint64_t>(out + 16, h.position);
  StoreLE<uint32_t>(out + 24, h.count);
  StoreLE<uint32_t>(out + 28, h.credit_seq);
  StoreLE<uint64_t>(out + 32, h.peer_head);
  StoreLE<uint64_t>(out + 40, h.credit_limit);
}

Status Corrupt(const std::string& what) { return Status(RpcErrc::kCorruptMessage, what); }

}  // namespace

uint32_t MessageBuilder::Finish(MessageHeader h) noexcept {
  h.count = count_;
  h.length = length();
  const uint32_t tail = h.length - kCanarySize;
  if (tail > used_) std::memset(out_ + used_, 0, tail - used_);
  StoreHeader(out_, h);
  StoreLE<uint64_t>(out_ + tail, h.canary);
  return h.length;
}

void BuildPad(std::byte* out, uint32_t length, uint64_t position, uint64_t canary,
              uint8_t extra_flags) noexcept {
  MessageHeader h;
  h.canary = canary;
  h.flags = static_cast<uint8_t>(kFlagPad | extra_flags);
  h.length = length;
  h.position = position;
  StoreHeader(out, h);
  StoreLE<uint64_t>(out + length - kCanarySize, canary);
}

MessageHeader DecodeHeader(const std::byte* p) noexcept {
  MessageHeader h;
  h.canary = LoadLE<uint64_t>(p + 0);
  h.flags = LoadLE<uint8_t>(p + 11);
  h.length = LoadLE<uint32_t>(p + 12);
  h.position = LoadLE<uint64_t>(p + 16);
  h.count = LoadLE<uint32_t>(p + 24);
  h.credit_seq = LoadLE<uint32_t>(p + 28);
  h.peer_head = LoadLE<uint64_t>(p + 32);
  h.credit_limit = LoadLE<uint64_t>(p + 40);
  return h;
}

bool MessageView::Cursor::Next(Entry* e) noexcept {
  if (left_ == 0) return false;
  e->meta.size = LoadLE<uint32_t>(p_ + 0);
  e->meta.handler = LoadLE<uint16_t>(p_ + 4);
  e->meta.status = LoadLE<uint16_t>(p_ + 6);
  e->meta.thread = LoadLE<uint32_t>(p_ + 8);
  e->meta.seq = LoadLE<uint32_t>(p_ + 12);
  e->data = {p_ + kMetaSize, e->meta.size};
  p_ += EntryBytes(e->meta.size);
  --left_;
  return true;
}

Result<MessageView> ParseMessage(std::span<const std::byte> bytes, uint64_t expected_position,
                                 bool response) {
  const auto where = [&] { return "message at ring position " + std::to_string(expected_position); };
  if (bytes.size() < kMinMessage || bytes.size() % kMessageAlign != 0) {
    return Corrupt(where() + ": " + std::to_string(bytes.size()) + " bytes is not a valid message length");
  }
  const std::byte* p = bytes.data();
  MessageView v;
  v.header_ = DecodeHeader(p);
  const MessageHeader& h = v.header_;
  const uint16_t magic = LoadLE<uint16_t>(p + 8);
  const uint8_t version = LoadLE<uint8_t>(p + 10);
  if (magic != kMagic) return Corrupt(where() + ": bad magic " + std::to_string(magic));
  if (version != kVersion) return Corrupt(where() + ": unsupported version " + std::to_string(version));
  if (h.canary == 0) return Corrupt(where() + ": zero canary");
  if (h.length != bytes.size()) {
    return Corrupt(where() + ": header length " + std::to_string(h.length) + " but " +
                   std::to_string(bytes.size()) + " bytes given");
  }
  if (LoadLE<uint64_t>(p + h.length - kCanarySize) != h.canary) {
    return Corrupt(where() + ": trailing canary does not match the header's");
  }
  if (h.position != expected_position) {
    return Corrupt(where() + ": header says position " + std::to_string(h.position));
  }
  if ((h.flags & ~kKnownFlags) != 0) return Corrupt(where() + ": unknown flags " + std::to_string(h.flags));
  if (((h.flags & kFlagResponse) != 0) != response) {
    return Corrupt(where() +
                   (response ? ": a request in a response ring" : ": a response in a request ring"));
  }
  if (!response && (h.flags & (kFlagCredit | kFlagActive)) != 0) {
    return Corrupt(where() + ": credit flags on a request");
  }
  if ((h.flags & kFlagPad) != 0 && h.count != 0) return Corrupt(where() + ": pad message with entries");
  // Entries must lie within [kHeaderSize, length - kCanarySize).
  const uint64_t end = h.length - kCanarySize;
  if (h.count > (end - kHeaderSize) / kMetaSize) {
    return Corrupt(where() + ": count " + std::to_string(h.count) + " cannot fit in " +
                   std::to_string(h.length) + " bytes");
  }
  uint64_t off = kHeaderSize;
  for (uint32_t i = 0; i < h.count; ++i) {
    if (end - off < kMetaSize) {
      return Corrupt(where() + ": entry " + std::to_string(i) + " meta runs past the message end");
    }
    const uint32_t size = LoadLE<uint32_t>(p + off);
    const uint16_t status = LoadLE<uint16_t>(p + off + 6);
    if (!response && status != 0) {
      return Corrupt(where() + ": entry " + std::to_string(i) + " is a request with a status");
    }
    if (EntryBytes(size) > end - off) {
      return Corrupt(where() + ": entry " + std::to_string(i) + " of " + std::to_string(size) +
                     " bytes runs past the message end");
    }
    off += EntryBytes(size);
  }
  v.entries_ = p + kHeaderSize;
  return v;
}

}  // namespace rdmq::rpc
