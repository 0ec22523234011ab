#include "rdmq/config/config_def.h"

#include <algorithm>

namespace rdmq::config {
namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string_view ClosestKey(std::string_view key, const std::vector<std::string_view>& known) {
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, key.size() / 3) + 1;  // farther than this: no guess
  for (std::string_view k : known) {
    // A prefix ("linger" for "linger.ms") or a last part ("partitions" for "num.partitions") is
    // as close as one typo.
    const bool part = !key.empty() && (k.starts_with(key) || (k.ends_with(key) && k.size() > key.size() &&
                                                              k[k.size() - key.size() - 1] == '.'));
    const size_t d = part ? 1 : EditDistance(key, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

Status UnknownKey(std::string_view table, std::string_view key, const std::vector<std::string_view>& known) {
  std::string what = "unknown config key '" + std::string(key) + "' for the " + std::string(table);
  if (const std::string_view guess = ClosestKey(key, known); !guess.empty()) {
    what += " (did you mean '" + std::string(guess) + "'?)";
  }
  what += "; 'rdmq config list " + std::string(table) + "' lists every key";
  return Status(ConfigErrc::kUnknownKey, std::move(what));
}

Result<std::pair<std::string_view, std::string_view>> SplitKeyValue(std::string_view kv) {
  const size_t eq = kv.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status(ConfigErrc::kBadValue, "'" + std::string(kv) + "': expected key=value");
  }
  return std::make_pair(kv.substr(0, eq), kv.substr(eq + 1));
}

}  // namespace rdmq::config
