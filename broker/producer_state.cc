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
  }
}

}  // namespace rdmq::broker::internal
