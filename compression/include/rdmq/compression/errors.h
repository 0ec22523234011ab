// Error codes of the compression codecs (category "compression"), mapped onto the generic
// rdmq::Errc conditions. Every Status carrying one also carries a context naming the codec and
// what went wrong ("zstd: frame truncated after 812 of the input's 900 bytes").
#pragma once

#include "rdmq/common/errors.h"

#define RDMQ_COMPRESSION_ERRORS(X)                                                  \
  X(kUnknownCodec, kInvalidArgument, "unknown compression codec")                   \
  X(kInvalidLevel, kInvalidArgument, "compression level out of the codec's range")  \
  X(kInputTooLarge, kInvalidArgument, "input too large for the codec")              \
  X(kCorruptInput, kCorruption, "compressed data is corrupt")                       \
  X(kTruncatedInput, kCorruption, "compressed data is truncated")                   \
  X(kOutputLimit, kResourceExhausted, "decompressed data exceeds the output limit") \
  X(kLibraryFailure, kInternal, "the compression library failed (out of memory or internal)")
RDMQ_DEFINE_ERRORS(rdmq::compression, CompressionErrc, "compression", RDMQ_COMPRESSION_ERRORS)
