// A random writer for crash tests, and the checker of what a log holds after a crash.
//
// Every record identifies itself: its key is "<kind><round>:<id>" (kind 'e' for exclusive
// appends, whose id is the offset; 's' for shared-mode batches, whose id is a per-round counter)
// and its value is ValueFor(salt of kind and round, id). So the checker can verify the exact bytes
// of any record it finds, acknowledged or not, and tell stale bytes of an earlier round apart.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "storage_test_util.h"

namespace rdmq::storage::test {

struct Ack {
  int64_t offset;
  uint32_t round;
  uint64_t id;
  char kind;  // 'e' or 's'
};

inline uint64_t KindSalt(char kind, uint32_t round) { return (kind == 'e' ? 1000 : 2000) + round; }

inline std::string RecordKey(char kind, uint32_t round, uint64_t id) {
  std::string k(1, kind);
  k += std::to_string(round);
  k += ':';
  k += std::to_string(id);
  return k;
}

inline bool ParseRecordKey(const std::string& k, char* kind, uint32_t* round, uint64_t* id) {
  if (k.size() < 4 || (k[0] != 'e' && k[0] != 's')) return false;
  const auto colon = k.find(':');
  if (colon == std::string::npos) return false;
  *kind = k[0];
  *round = static_cast<uint32_t>(std::stoul(k.substr(1, colon - 1)));
  *id = std::stoull(k.substr(colon + 1));
  return true;
}

// Drives a log with random exclusive appends, shared-mode reserve/write/commit rounds (some
// reservations abandoned, some crossing the segment end), lease expiry and rolls. Reports every
// acknowledged record through `on_ack`. Stops at the first error and returns it.
class Workload {
 public:
  Workload(PartitionLog* log, uint32_t round, uint64_t seed, bool shared, size_t max_value = 200)
      : log_(log), round_(round), rng_(seed), shared_(shared), max_value_(max_value) {}

  using AckFn = std::function<void(const Ack&)>;

  Status Step(const AckFn& on_ack) {
    const uint64_t dice = rng_() % 100;
    if (!shared_ || dice < 45) return AppendStep(on_ack);
    if (dice < 95) return SharedStep(on_ack);
    if (dice < 98) {
      const Status s = log_->Roll();
      // An empty segment with outstanding reservations cannot be sealed; that is fine here.
      return s.is(StorageErrc::kReservationConflict) ? Status::Ok() : s;
    }
    return Expire(on_ack);
  }

 private:
  Status AppendStep(const AckFn& on_ack) {
    const int n = 1 + static_cast<int>(rng_() % 12);
    const int64_t first = log_->HighWatermark().value();
    std::vector<std::string> keys, values;
    std::vector<RecordInput> recs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      keys.push_back(RecordKey('e', round_, static_cast<uint64_t>(first + i)));
      values.push_back(ValueFor(KindSalt('e', round_), static_cast<uint64_t>(first + i), max_value_));
    }
    for (int i = 0; i < n; ++i) {
      recs[i].key = std::string_view(keys[i]);
      recs[i].value = std::string_view(values[i]);
      recs[i].timestamp = TimestampMs(first + i);
    }
    auto r = log_->Append(recs);
    if (!r.ok()) {
      // Outstanding reservations from an earlier shared step: expire them first.
      if (r.status().is(StorageErrc::kReservationConflict)) return Expire(on_ack);
      return r.status();
    }
    if (r->base_offset.value() != first) {
      return Status(Errc::kInternal, "append got offset " + std::to_string(r->base_offset.value()) +
                                         ", expected " + std::to_string(first));
    }
    for (int i = 0; i < n; ++i) on_ack(Ack{first + i, round_, static_cast<uint64_t>(first + i), 'e'});
    return Status::Ok();
  }

  struct Planned {
    Reservation res;
    std::vector<uint64_t> ids;
    std::string bytes;
  };

  Status SharedStep(const AckFn& on_ack) {
    const int k = 1 + static_cast<int>(rng_() % 3);
    std::vector<Planned> plans;
    for (int i = 0; i < k; ++i) {
      Planned p;
      const int n = 1 + static_cast<int>(rng_() % 6);
      std::vector<std::string> keys, values;
      for (int j = 0; j < n; ++j) {
        p.ids.push_back(next_id_++);
        keys.push_back(RecordKey('s', round_, p.ids.back()));
        values.push_back(ValueFor(KindSalt('s', round_), p.ids.back(), max_value_));
      }
      std::vector<RecordInput> recs(static_cast<size_t>(n));
      for (int j = 0; j < n; ++j) {
        recs[j].key = std::string_view(keys[j]);
        recs[j].value = std::string_view(values[j]);
        recs[j].timestamp = TimestampMs(static_cast<int64_t>(p.ids[j]));
      }
      p.bytes = EncodeBatch(BatchOptions{}, recs);  // baseOffset -1
      auto r = log_->Reserve(p.bytes.size());
      if (!r.ok()) return r.status();
      p.res = *r;
      if (p.res.fits) {
        std::byte* data = nullptr;
        for (const auto& s : log_->Segments()) {
          if (s.base_offset == p.res.segment) data = s.data();
        }
        if (data == nullptr) return Status(Errc::kInternal, "reserved in a segment that is gone");
        std::memcpy(data + p.res.position.value(), p.bytes.data(), p.bytes.size());
        positions_[{p.res.segment.value(), p.res.position.value()}] = p.ids;
      }
      plans.push_back(std::move(p));
    }
    std::shuffle(plans.begin(), plans.end(), rng_);
    for (auto& p : plans) {
      if (p.res.fits && rng_() % 10 == 0) continue;  // this producer dies: its lease will expire
      auto c = log_->Commit({CommitMode::kShared, p.res.segment, p.res.position, p.bytes.size(), kNoOffset});
      if (c.ok()) {
        Report(c->completed, on_ack);
        continue;
      }
      if (c.status().is(StorageErrc::kSegmentFull) || c.status().is(StorageErrc::kSegmentSealed)) continue;
      return c.status();
    }
    // Let the log move past holes left by "dead" producers.
    if (rng_() % 3 == 0) return Expire(on_ack);
    return Status::Ok();
  }

  Status Expire(const AckFn& on_ack) {
    for (int i = 0; i < 2; ++i) {
      now_ += 10'000'000'000ULL;  // far beyond any lease
      auto e = log_->ExpireReservations(now_);
      if (!e.ok()) return e.status();
      Report(e->completed, on_ack);
    }
    return Status::Ok();
  }

  void Report(std::span<const CompletedRange> c, const AckFn& on_ack) {
    for (size_t i = 0; i < c.size(); ++i) {
      if (c[i].filler) continue;
      const auto it = positions_.find({c[i].segment.value(), c[i].position.value()});
      if (it == positions_.end()) continue;
      for (size_t j = 0; j < it->second.size(); ++j) {
        on_ack(Ack{c[i].base_offset.value() + static_cast<int64_t>(j), round_, it->second[j], 's'});
      }
    }
  }

  PartitionLog* log_;
  uint32_t round_;
  std::mt19937_64 rng_;
  bool shared_;
  size_t max_value_;
  uint64_t next_id_ = 0;
  uint64_t now_ = 1;
  std::map<std::pair<int64_t, uint64_t>, std::vector<uint64_t>> positions_;
};

// What the log must hold after crashes, accumulated over rounds.
class Checker {
 public:
  void OnAck(const Ack& a) { acked_[a.offset] = a; }

  // Checks the recovered log after the crash that ended `round`, then remembers what it holds.
  // Returns "" when everything is right, else a description of the first problem.
  std::string CheckAfterCrash(const PartitionLog& log, uint32_t round) {
    const auto all = ReadAll(log);  // every Read verifies CRCs; a bad batch fails the test there
    const int64_t start = log.LogStartOffset().value();
    const int64_t hwm = log.HighWatermark().value();
    if (static_cast<int64_t>(all.size()) != hwm - start) {
      return "read " + std::to_string(all.size()) + " records, the log claims " + std::to_string(hwm - start);
    }
    std::map<int64_t, Ack> seen;
    for (const auto& r : all) {
      if (r.control) continue;  // fillers
      char kind;
      uint32_t rd;
      uint64_t id;
      if (!r.key || !ParseRecordKey(*r.key, &kind, &rd, &id)) {
        return "offset " + std::to_string(r.offset) + " has an unrecognisable key";
      }
      if (r.value != ValueFor(KindSalt(kind, rd), id, max_value_)) {
        return "offset " + std::to_string(r.offset) + " (" + *r.key + ") has the wrong value bytes";
      }
      if (kind == 'e' && static_cast<int64_t>(id) != r.offset) {
        return "offset " + std::to_string(r.offset) + " holds exclusive record " + *r.key;
      }
      // A record of round q at or beyond where the recovery after round q (or a later one before
      // this) ended the log was truncated then: finding it now means stale bytes came back.
      for (uint32_t s = rd; s < round; ++s) {
        if (recovered_hwm_.count(s) && r.offset >= recovered_hwm_[s]) {
          return "offset " + std::to_string(r.offset) + " (" + *r.key +
                 ") resurrected: recovery after round " + std::to_string(s) + " ended the log at " +
                 std::to_string(recovered_hwm_[s]);
        }
      }
      seen[r.offset] = Ack{r.offset, rd, id, kind};
    }
    for (const auto& [off, a] : acked_) {
      if (off < start) continue;  // removed by retention
      auto it = seen.find(off);
      if (it == seen.end()) return "acknowledged offset " + std::to_string(off) + " is missing";
      if (it->second.round != a.round || it->second.id != a.id || it->second.kind != a.kind) {
        return "acknowledged offset " + std::to_string(off) + " holds " +
               RecordKey(it->second.kind, it->second.round, it->second.id) + " instead of " +
               RecordKey(a.kind, a.round, a.id);
      }
    }
    // What recovery found is durable from now on: it must be there after every later crash.
    for (const auto& [off, a] : seen) acked_[off] = a;
    recovered_hwm_[round] = hwm;
    return "";
  }

  size_t acked() const { return acked_.size(); }
  size_t max_value_ = 200;

 private:
  std::map<int64_t, Ack> acked_;
  std::map<uint32_t, int64_t> recovered_hwm_;
};

}  // namespace rdmq::storage::test
