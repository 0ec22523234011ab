// Fuzzes the metadata log decoder and the JSON mutation/checkpoint decoders (topic store and
// offset store) and the topic, user and ACL entry decoders over arbitrary bytes; and the user and
// ACL-list records of a cluster's znodes (DecodeUser, DecodeAcls), whatever decodes encoding and
// decoding again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "metadata/acl_json.h"
#include "metadata/offsets_json.h"
#include "metadata/store_json.h"
#include "metadata/topic_json.h"
#include "metadata/user_json.h"
#include "metadata/wal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace md = rdmq::metadata;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto r = md::wal::DecodeLog(bytes, "fuzz");
  if (r.ok()) {
    for (const auto& rec : r->records) {
      (void)md::internal::DecodeMutation(rec.payload, "fuzz", rec.seq);
      (void)md::internal::DecodeOffsetMutation(rec.payload, "fuzz", rec.seq);
    }
  }
  (void)md::internal::DecodeOffsetMutation(bytes, "fuzz", 1);
  md::internal::OffsetState offsets;
  (void)md::internal::DecodeOffsetCheckpoint(bytes, "fuzz", &offsets);
  (void)md::internal::DecodeMutation(bytes, "fuzz", 1);
  md::internal::StoreState state;
  (void)md::internal::DecodeCheckpoint(bytes, "fuzz", &state);
  if (auto u = md::DecodeUser(bytes); u.ok()) {
    auto again = md::DecodeUser(md::EncodeUser(*u));
    if (!again.ok() || !(*again == *u)) std::abort();
  }
  if (auto a = md::DecodeAcls(bytes); a.ok()) {
    auto again = md::DecodeAcls(md::EncodeAcls(*a));
    if (!again.ok() || *again != *a) std::abort();
  }
  auto j = nlohmann::json::parse(bytes, nullptr, false);
  if (!j.is_discarded()) {
    (void)md::TopicInfoFromJson(j);
    (void)md::TopicConfigFromJson(j, md::TopicConfig{});
    (void)md::UserInfoFromJson(j);
    (void)md::AclFromJson(j);
  }
  return 0;
}
