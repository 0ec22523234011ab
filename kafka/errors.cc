// Kafka error-code names (errors.h).
#include "rdmq/kafka/errors.h"

namespace rdmq::kafka {

std::string_view ErrorName(ErrorCode code) noexcept {
  switch (code) {
#define RDMQ_KAFKA_ERROR_NAME_(name, value, text) \
  case ErrorCode::name:                           \
    return text;
    RDMQ_KAFKA_ERROR_CODES(RDMQ_KAFKA_ERROR_NAME_)
#undef RDMQ_KAFKA_ERROR_NAME_
  }
  return "UNKNOWN_ERROR_CODE";
}

}  // namespace rdmq::kafka
