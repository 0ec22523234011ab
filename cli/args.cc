#include "rdmq/cli/args.h"

#include <cctype>

namespace rdmq::cli {

Status UsageError(std::string what) { return Status(CliErrc::kUsage, std::move(what)); }

Result<std::string> Unescape(std::string_view text, std::string_view what) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 1 >= text.size())
      return UsageError(std::string(what) + ": '" + std::string(text) + "' ends in a lone '\\'");
    const char c = text[++i];
    switch (c) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case '0':
        out.push_back('\0');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case 'x': {
        auto hex = [](char h) -> int {
          if (h >= '0' && h <= '9') return h - '0';
          if (h >= 'a' && h <= 'f') return h - 'a' + 10;
          if (h >= 'A' && h <= 'F') return h - 'A' + 10;
          return -1;
        };
        if (i + 2 >= text.size()) {
          return UsageError(std::string(what) + ": '\\x' needs two hex digits in '" + std::string(text) +
                            "'");
        }
        const int hi = hex(text[i + 1]);
        const int lo = hex(text[i + 2]);
        if (hi < 0 || lo < 0) {
          return UsageError(std::string(what) + ": '\\x' needs two hex digits in '" + std::string(text) +
                            "'");
        }
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        break;
      }
      default:
        return UsageError(std::string(what) + ": unknown escape '\\" + std::string(1, c) + "' in '" +
                          std::string(text) + "' (use \\n \\t \\r \\0 \\\\ or \\xHH)");
    }
  }
  return out;
}

namespace {

// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int64_t y, int64_t m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

}  // namespace

Result<int64_t> ParseDateTimeMs(std::string_view text, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return UsageError(std::string(what) + ": '" + std::string(text) + "' " + why +
                      " (want YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+HH:MM|-HH:MM], e.g. 2026-11-21T10:00:00Z)");
  };
  size_t i = 0;
  // Exactly `n` digits at i.
  auto digits = [&](size_t n, int64_t* out) {
    if (i + n > text.size()) return false;
    int64_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = text[i + k];
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    i += n;
    return true;
  };
  auto literal = [&](char c) {
    if (i < text.size() && text[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  if (!digits(4, &y) || !literal('-') || !digits(2, &mo) || !literal('-') || !digits(2, &d))
    return bad("is not a date");
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return bad("is not a valid date");
  if (y < 1970) return bad("is before 1970");
  if (literal('T') || literal('t') || literal(' ')) {
    if (!digits(2, &h) || !literal(':') || !digits(2, &mi)) return bad("has no HH:MM after the date");
    if (literal(':')) {
      if (!digits(2, &sec)) return bad("has no seconds after the second ':'");
      if (literal('.') || literal(',')) {
        int64_t scale = 100;
        size_t n = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 9) {
          ms += (text[i] - '0') * scale;
          scale /= 10;
          ++i;
          ++n;
        }
        if (n == 0) return bad("has no digits after the decimal point");
      }
    }
    if (h > 23 || mi > 59 || sec > 59) return bad("is not a valid time of day");
  }
  int64_t zone_minutes = 0;
  if (i < text.size()) {
    if (literal('Z') || literal('z')) {
    } else if (text[i] == '+' || text[i] == '-') {
      const int64_t sign = text[i] == '-' ? -1 : 1;
      ++i;
      int64_t zh = 0, zm = 0;
      if (!digits(2, &zh)) return bad("has a bad zone offset");
      if (literal(':')) {
        if (!digits(2, &zm)) return bad("has a bad zone offset");
      } else if (i < text.size() && !digits(2, &zm)) {
        return bad("has a bad zone offset");
      }
      if (zh > 23 || zm > 59) return bad("has a bad zone offset");
      zone_minutes = sign * (zh * 60 + zm);
    }
    if (i != text.size()) return bad("has unexpected text '" + std::string(text.substr(i)) + "'");
  }
  const int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - zone_minutes * 60;
  if (secs < 0) return bad("is before 1970-01-01T00:00:00Z");
  return secs * 1000 + ms;
}

std::string FormatError(const Status& status) {
  if (status.ok()) return "OK";
  std::string message = status.code().message();
  const std::string_view context = status.context();
  const std::string_view category = status.code().category().name();
  if (category == "cli" || category == "config") return context.empty() ? message : std::string(context);
  if (context.empty()) return message;
  if (category == "rdmq") return message + ": " + std::string(context);  // broker's wire errors
  return std::string(context) + ": " + message;
}

}  // namespace rdmq::cli
