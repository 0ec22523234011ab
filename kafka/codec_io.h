// Internal: one description of each message's fields drives both directions.
//
// A message body is written once as a template over an "Io":
//
//   template <class Io, class M>
//   void HeartbeatRequestBody(Io& io, int16_t v, M& m) {
//     io.String(m.group_id, "group_id");
//     ...
//     if (v >= 3) io.NullableString(m.group_instance_id, "group_instance_id");
//   }
//
// ReadIo fills a (non-const) message from a Reader; WriteIo writes a (const) message to a Writer.
// Requests are decoded by the broker and encoded by tests and the fuzzer; responses the other way
// round; the same body serves all four, so encoders and decoders cannot drift apart (the golden
// byte tests pin the body to Kafka's specification).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/api.h"
#include "rdmq/kafka/errors.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka::internal {

class ReadIo {
 public:
  explicit ReadIo(Reader& r) : r_(r) {}
  bool ok() const { return r_.ok(); }
  Reader& reader() { return r_; }

  void Int8(int8_t& v, std::string_view f) { v = r_.Int8(f); }
  void Int16(int16_t& v, std::string_view f) { v = r_.Int16(f); }
  void Int32(int32_t& v, std::string_view f) { v = r_.Int32(f); }
  void Int64(int64_t& v, std::string_view f) { v = r_.Int64(f); }
  void Bool(bool& v, std::string_view f) { v = r_.Bool(f); }
  void Error(ErrorCode& v, std::string_view f) { v = static_cast<ErrorCode>(r_.Int16(f)); }

  void String(std::string_view& s, std::string_view f) { s = r_.String(f); }
  void String(std::string& s, std::string_view f) { s = std::string(r_.String(f)); }
  void NullableString(std::optional<std::string_view>& s, std::string_view f) { s = r_.NullableString(f); }
  void NullableString(std::optional<std::string>& s, std::string_view f) {
    const auto v = r_.NullableString(f);
    s = v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
  }
  void CompactString(std::string_view& s, std::string_view f) { s = r_.CompactString(f); }
  void CompactString(std::string& s, std::string_view f) { s = std::string(r_.CompactString(f)); }
  void Bytes(ByteSpan& b, std::string_view f) { b = r_.Bytes(f); }
  void NullableBytes(std::optional<ByteSpan>& b, std::string_view f) { b = r_.NullableBytes(f); }
  // Fetch records: one nullable bytes field, kept as a list of chunks (one, or none when empty).
  void Records(std::vector<ByteSpan>& chunks, std::string_view f) {
    chunks.clear();
    const auto b = r_.NullableBytes(f);
    if (b && !b->empty()) chunks.push_back(*b);
  }
  void TaggedFields(std::string_view f) { r_.SkipTaggedFields(f); }

  // Arrays: `each(element)` reads one element. min_element is the fewest bytes an element takes
  // at this version (bounds the count before anything is allocated).
  template <class T, class F>
  void Array(std::vector<T>& v, std::string_view f, size_t min_element, F&& each) {
    const size_t at = r_.offset();
    const int32_t n = r_.ArrayLength(f, min_element);
    if (n < 0 && r_.ok())
      r_.FailAt(at, KafkaErrc::kMalformed, f, "null array where the field is not nullable");
    Fill(v, n, each);
  }
  template <class T, class F>
  void NullableArray(std::optional<std::vector<T>>& v, std::string_view f, size_t min_element, F&& each) {
    const int32_t n = r_.ArrayLength(f, min_element);
    if (n < 0 || !r_.ok()) {
      v.reset();
      return;
    }
    v.emplace();
    Fill(*v, n, each);
  }
  // An optional array at a version where null is not allowed.
  template <class T, class F>
  void RequiredArray(std::optional<std::vector<T>>& v, std::string_view f, size_t min_element, F&& each) {
    v.emplace();
    Array(*v, f, min_element, each);
  }
  template <class T, class F>
  void CompactArray(std::vector<T>& v, std::string_view f, size_t min_element, F&& each) {
    const size_t at = r_.offset();
    const int32_t n = r_.CompactArrayLength(f, min_element);
    if (n < 0 && r_.ok())
      r_.FailAt(at, KafkaErrc::kMalformed, f, "null array where the field is not nullable");
    Fill(v, n, each);
  }
  void Int32Array(std::vector<int32_t>& v, std::string_view f) {
    Array(v, f, 4, [&](int32_t& x) { x = r_.Int32(f); });
  }
  void StringArray(std::vector<std::string_view>& v, std::string_view f) {
    Array(v, f, 2, [&](std::string_view& x) { x = r_.String(f); });
  }
  void StringArray(std::vector<std::string>& v, std::string_view f) {
    Array(v, f, 2, [&](std::string& x) { x = std::string(r_.String(f)); });
  }

 private:
  template <class T, class F>
  void Fill(std::vector<T>& v, int32_t n, F& each) {
    v.clear();
    if (n <= 0 || !r_.ok()) return;
    v.resize(static_cast<size_t>(n));  // bounded: n * min_element <= bytes left
    for (T& e : v) {
      each(e);
      if (!r_.ok()) {
        v.clear();
        return;
      }
    }
  }

  Reader& r_;
};

class WriteIo {
 public:
  explicit WriteIo(Writer& w) : w_(w) {}
  bool ok() const { return true; }

  void Int8(int8_t v, std::string_view) { w_.Int8(v); }
  void Int16(int16_t v, std::string_view) { w_.Int16(v); }
  void Int32(int32_t v, std::string_view) { w_.Int32(v); }
  void Int64(int64_t v, std::string_view) { w_.Int64(v); }
  void Bool(bool v, std::string_view) { w_.Bool(v); }
  void Error(ErrorCode v, std::string_view) { w_.Int16(static_cast<int16_t>(v)); }

  void String(std::string_view s, std::string_view) { w_.String(s); }
  void NullableString(const std::optional<std::string_view>& s, std::string_view) { w_.NullableString(s); }
  void NullableString(const std::optional<std::string>& s, std::string_view) {
    w_.NullableString(s ? std::optional<std::string_view>(*s) : std::nullopt);
  }
  void CompactString(std::string_view s, std::string_view) { w_.CompactString(s); }
  void Bytes(ByteSpan b, std::string_view) { w_.Bytes(b); }
  void NullableBytes(const std::optional<ByteSpan>& b, std::string_view) { w_.NullableBytes(b); }
  // Records: the int32 length of all chunks, then the chunks by reference (no copy).
  void Records(const std::vector<ByteSpan>& chunks, std::string_view) {
    size_t total = 0;
    for (const ByteSpan& c : chunks) total += c.size();
    w_.Int32(static_cast<int32_t>(total));
    for (const ByteSpan& c : chunks) w_.External(c);
  }
  void TaggedFields(std::string_view) { w_.EmptyTaggedFields(); }

  template <class T, class F>
  void Array(const std::vector<T>& v, std::string_view, size_t, F&& each) {
    w_.ArrayLength(static_cast<int32_t>(v.size()));
    for (const T& e : v) each(e);
  }
  template <class T, class F>
  void NullableArray(const std::optional<std::vector<T>>& v, std::string_view f, size_t min_element,
                     F&& each) {
    if (!v) {
      w_.ArrayLength(-1);
    } else {
      Array(*v, f, min_element, each);
    }
  }
  // A null array where the version has no null is written empty.
  template <class T, class F>
  void RequiredArray(const std::optional<std::vector<T>>& v, std::string_view f, size_t min_element,
                     F&& each) {
    if (!v) {
      w_.ArrayLength(0);
    } else {
      Array(*v, f, min_element, each);
    }
  }
  template <class T, class F>
  void CompactArray(const std::vector<T>& v, std::string_view, size_t, F&& each) {
    w_.CompactArrayLength(static_cast<int32_t>(v.size()));
    for (const T& e : v) each(e);
  }
  void Int32Array(const std::vector<int32_t>& v, std::string_view f) {
    Array(v, f, 4, [&](int32_t x) { w_.Int32(x); });
  }
  template <class S>
  void StringArray(const std::vector<S>& v, std::string_view f) {
    Array(v, f, 2, [&](const S& x) { w_.String(x); });
  }

 private:
  Writer& w_;
};

// Decodes a whole message body of `key` at version `v` into *out (reset first) and requires the
// reader to end exactly there. The error names the message and version.
template <class M, class Body>
Status DecodeMessage(Reader& r, ApiKey key, int16_t v, M* out, std::string_view what, Body&& body) {
  if (!Supported(key, v)) {
    r.Fail(KafkaErrc::kUnsupportedVersion, what, "version " + std::to_string(v));
    return r.status();
  }
  *out = M{};
  ReadIo io(r);
  body(io, v, *out);
  Status s = r.ExpectEnd(what);
  if (!s.ok()) return s.WithContext(std::string(what) + " v" + std::to_string(v));
  return s;
}

}  // namespace rdmq::kafka::internal

// Defines Decode() and Encode() of one message type from its body template.
#define RDMQ_KAFKA_MESSAGE_CODEC(Type, key, Body)                                                     \
  Status Decode(Reader& r, int16_t version, Type* out) {                                              \
    return internal::DecodeMessage(r, key, version, out, #Type,                                       \
                                   [](internal::ReadIo& io, int16_t v, Type& m) { Body(io, v, m); }); \
  }                                                                                                   \
  void Encode(Writer& w, int16_t version, const Type& m) {                                            \
    internal::WriteIo io(w);                                                                          \
    Body(io, version, m);                                                                             \
  }
