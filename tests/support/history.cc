#include "support/history.h"

#include <sstream>

namespace rdmq::test {
namespace {

constexpr size_t kMaxProblems = 20;

// "<writer>-<n>" -> (writer, n); n = -1 when the value has no such form.
std::pair<std::string, int64_t> WriterAndNumber(const std::string& value) {
  const size_t dash = value.rfind('-');
  if (dash == std::string::npos || dash + 1 == value.size()) return {value, -1};
  int64_t n = 0;
  for (size_t i = dash + 1; i < value.size(); ++i) {
    if (value[i] < '0' || value[i] > '9') return {value, -1};
    n = n * 10 + (value[i] - '0');
  }
  return {value.substr(0, dash), n};
}

std::string Where(int32_t partition, int64_t offset) {
  return "partition " + std::to_string(partition) + " offset " + std::to_string(offset);
}

}  // namespace

void History::Acknowledged(int32_t partition, int64_t offset, std::string value) {
  acked_[partition].emplace_back(offset, std::move(value));
}

void History::Read(int32_t partition, Records records) { reads_[partition].push_back(std::move(records)); }

void History::Final(int32_t partition, Records records) { final_[partition] = std::move(records); }

History::Verdict History::Check() const {
  Verdict v;
  auto problem = [&v](const std::string& what) {
    if (v.problems.size() < kMaxProblems) v.problems.push_back(what);
  };

  // The final logs, offset -> value, and one value per offset in them too.
  std::map<int32_t, std::map<int64_t, std::string>> final_at;
  for (const auto& [partition, records] : final_) {
    v.final_records += records.size();
    auto& at = final_at[partition];
    for (const auto& [offset, value] : records) {
      if (auto [it, fresh] = at.emplace(offset, value); !fresh && it->second != value) {
        problem("final read has two records at " + Where(partition, offset) + ": '" + it->second + "' and '" +
                value + "'");
      }
    }
  }

  // Nothing acknowledged lost or moved.
  for (const auto& [partition, acks] : acked_) {
    v.acknowledged += acks.size();
    const auto f = final_at.find(partition);
    for (const auto& [offset, value] : acks) {
      if (f == final_at.end()) {
        problem("acknowledged '" + value + "' at " + Where(partition, offset) +
                ", and the partition was never read");
        continue;
      }
      const auto it = f->second.find(offset);
      if (it == f->second.end()) {
        problem("acknowledged '" + value + "' at " + Where(partition, offset) +
                " is lost: the final log has nothing there");
      } else if (it->second != value) {
        problem("acknowledged '" + value + "' at " + Where(partition, offset) +
                " is lost: the final log has '" + it->second + "' there");
      }
    }
  }

  // Every read: one value per offset across all reads, nothing the final log does not keep,
  // offsets rising, each writer's records in the order written.
  std::map<int32_t, std::map<int64_t, std::string>> seen;
  auto judge_read = [&](int32_t partition, const Records& records, bool is_final) {
    v.read += records.size();
    const auto f = final_at.find(partition);
    std::map<std::string, int64_t> last_of_writer;
    int64_t last_offset = -1;
    for (const auto& [offset, value] : records) {
      if (offset <= last_offset) {
        problem("a read of partition " + std::to_string(partition) + " went from offset " +
                std::to_string(last_offset) + " to " + std::to_string(offset));
      }
      last_offset = offset;
      if (auto [it, fresh] = seen[partition].emplace(offset, value); !fresh && it->second != value) {
        problem("two records read at " + Where(partition, offset) + ": '" + it->second + "' and '" + value +
                "'");
      }
      if (!is_final && f != final_at.end()) {
        const auto kept = f->second.find(offset);
        if (kept == f->second.end() || kept->second != value) {
          problem("'" + value + "' was read at " + Where(partition, offset) + " and later truncated away");
        }
      }
      const auto [writer, n] = WriterAndNumber(value);
      if (n < 0) continue;
      if (auto it = last_of_writer.find(writer); it != last_of_writer.end() && n <= it->second) {
        problem("writer " + writer + "'s record " + std::to_string(n) + " came after its record " +
                std::to_string(it->second) + " in " + Where(partition, offset));
      }
      last_of_writer[writer] = n;
    }
  };
  for (const auto& [partition, records] : final_) judge_read(partition, records, true);
  for (const auto& [partition, reads] : reads_) {
    for (const auto& records : reads) judge_read(partition, records, false);
  }
  return v;
}

std::string History::Verdict::ToString() const {
  std::ostringstream out;
  out << acknowledged << " acknowledged, " << read << " read, " << final_records << " in the final logs; ";
  if (problems.empty()) {
    out << "no problem found";
  } else {
    out << problems.size() << " problem(s):";
    for (const auto& p : problems) out << "\n  " << p;
  }
  return out.str();
}

}  // namespace rdmq::test
