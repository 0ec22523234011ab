#include "rdmq/cli/args.h"

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
