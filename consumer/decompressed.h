// DecompressedBuffers: where the reader (consumer.cc) decompresses the records of compressed
// batches. The records a Poll returns are views into them, valid until the next Poll, so every
// compressed batch of a Poll gets a buffer of its own; the buffers are kept for the next Poll
// (their capacity reused) unless they grew large.
//
// Threading: used by the consumer's one polling thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace rdmq::consumer::internal {

class DecompressedBuffers {
 public:
  // Frees every buffer for reuse: the views into them die. Called at the start of a Poll.
  void Reset() {
    for (size_t i = 0; i < used_; ++i) {
      if (bufs_[i]->capacity() > kKeepBytes) std::string().swap(*bufs_[i]);
    }
    used_ = 0;
  }
  // A buffer for one batch's records; its address and contents stay put until Reset.
  std::string* Next() {
    if (used_ == bufs_.size()) bufs_.push_back(std::make_unique<std::string>());
    return bufs_[used_++].get();
  }
  // The buffer Next() returned last holds nothing returned to the application: reuse it.
  void GiveBack() {
    if (used_ > 0) --used_;
  }

 private:
  static constexpr size_t kKeepBytes = size_t{4} << 20;
  std::vector<std::unique_ptr<std::string>> bufs_;
  size_t used_ = 0;
};

}  // namespace rdmq::consumer::internal
