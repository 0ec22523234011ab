// Record values the end-to-end tests can verify byte for byte: "<tag>:<index>:" followed by
// bytes derived from (tag, index, position), padded to the requested size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rdmq::test {

inline char FillByte(std::string_view tag, long index, size_t pos) {
  uint64_t h = 1469598103934665603ull;
  for (char c : tag) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  h ^= static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull + pos * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  return static_cast<char>('a' + h % 26);
}

inline std::string MakeValue(std::string_view tag, long index, size_t size) {
  std::string v = std::string(tag) + ":" + std::to_string(index) + ":";
  for (size_t p = v.size(); p < size; ++p) v.push_back(FillByte(tag, index, p));
  return v;
}

// Parses and verifies a value made by MakeValue. False if any byte is wrong.
inline bool CheckValue(std::string_view v, std::string* tag, long* index) {
  const auto a = v.find(':');
  if (a == std::string_view::npos) return false;
  const auto b = v.find(':', a + 1);
  if (b == std::string_view::npos) return false;
  *tag = std::string(v.substr(0, a));
  try {
    *index = std::stol(std::string(v.substr(a + 1, b - a - 1)));
  } catch (...) {
    return false;
  }
  for (size_t p = b + 1; p < v.size(); ++p) {
    if (v[p] != FillByte(*tag, *index, p)) return false;
  }
  return true;
}

}  // namespace rdmq::test
