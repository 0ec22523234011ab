#include "producer_state.h"

namespace rdmq::broker::internal {

ProducerState ProducerStateTable::Expected(ProducerId id, int16_t epoch) const {
  auto it = states_.find(id);
  if (it == states_.end() || it->second.epoch != epoch) return ProducerState{epoch, -1};
  return it->second;
}

int32_t ProducerStateTable::LastSequence(ProducerId id, int16_t epoch) const {
  auto it = states_.find(id);
  return it != states_.end() && it->second.epoch == epoch ? it->second.last_sequence : -1;
}

std::optional<int16_t> ProducerStateTable::Epoch(ProducerId id) const {
  auto it = states_.find(id);
  if (it == states_.end()) return std::nullopt;
  return it->second.epoch;
}

void ProducerStateTable::Set(ProducerId id, ProducerState state) { states_[id] = state; }

void ProducerStateTable::Rewind(ProducerId id, int32_t first_sequence) {
  if (first_sequence < 0) return;
  auto it = states_.find(id);
  if (it != states_.end() && it->second.last_sequence >= first_sequence) {
    it->second.last_sequence = first_sequence - 1;
  }
}

void ProducerStateTable::Observe(const storage::BatchHeader& h) {
  if (h.producer_id.value() < 0 || h.is_control()) return;
  ProducerState& st = states_[h.producer_id];
  if (h.producer_epoch >= st.epoch) {
    st.epoch = h.producer_epoch;
    st.last_sequence = static_cast<int32_t>(h.base_sequence + h.last_offset_delta);
    NoteBatch(h.producer_id, h.producer_epoch, {h.base_sequence, st.last_sequence, h.base_offset});
  }
}

void ProducerStateTable::NoteBatch(ProducerId id, int16_t epoch, const BatchPlace& place) {
  Recent& r = recent_[id];
  if (r.epoch != epoch) r = Recent{epoch, {}, 0};
  r.batches[r.next] = place;
  r.next = (r.next + 1) % kRecentBatches;
}

std::optional<Offset> ProducerStateTable::FindBatch(ProducerId id, int16_t epoch, int32_t first_sequence,
                                                    int32_t last_sequence) const {
  auto it = recent_.find(id);
  if (it == recent_.end() || it->second.epoch != epoch) return std::nullopt;
  for (const BatchPlace& b : it->second.batches) {
    // A remembered range may hold several requests' batches (the Kafka front door appends
    // pipelined requests as one): within it, one sequence is one offset.
    if (b.first_sequence <= first_sequence && last_sequence <= b.last_sequence &&
        b.base_offset != kNoOffset) {
      return Offset(b.base_offset.value() + (first_sequence - b.first_sequence));
    }
  }
  return std::nullopt;
}

}  // namespace rdmq::broker::internal
