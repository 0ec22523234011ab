// History: what a test's clients saw of a cluster, judged as Jepsen judges a history
// (docs/replication.md, "How failures are tested"). Every record a test writes carries a value
// of its own (written once), so the records can be told apart wherever they show up.
//
//   History h;
//   h.Acknowledged(0, 41, "w-17");               // the broker acknowledged w-17 at offset 41
//   h.Read(0, {{40, "w-16"}, {41, "w-17"}});       // a consumer's read of partition 0, in order
//   h.Final(0, everything_read_at_the_end);        // the whole partition once all has settled
//   const History::Verdict v = h.Check();          // v.ok(), v.problems
//
// Check finds: an acknowledged record missing from the final log or at another offset there
// (lost); two different records read at one offset (by any reads, the final one included); a
// record read that the final log does not have at that offset (read, then truncated away); and a
// read whose offsets do not rise, or in which one writer's records (values "<writer>-<n>") come
// out of the order they were written. Records read that were never acknowledged are fine (a write
// may succeed without its acknowledgement arriving).
// Threading: not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rdmq::test {

class History {
 public:
  using Records = std::vector<std::pair<int64_t, std::string>>;  // (offset, value), in read order

  struct Verdict {
    std::vector<std::string> problems;  // empty when the history is good (at most 20 listed)
    size_t acknowledged = 0;            // records acknowledged
    size_t read = 0;                    // records read, over every read
    size_t final_records = 0;           // records in the final logs
    bool ok() const { return problems.empty(); }
    std::string ToString() const;
  };

  void Acknowledged(int32_t partition, int64_t offset, std::string value);
  void Read(int32_t partition, Records records);
  // The final read of a partition from its start (replaces an earlier Final).
  void Final(int32_t partition, Records records);
  Verdict Check() const;

 private:
  std::map<int32_t, Records> acked_;  // partition -> (offset, value), in acknowledgement order
  std::map<int32_t, std::vector<Records>> reads_;
  std::map<int32_t, Records> final_;
};

}  // namespace rdmq::test
