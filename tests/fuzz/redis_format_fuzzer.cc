// redis_format_fuzzer.cc: libFuzzer target for the decoders of the values
// and set members the Redis Cluster backend reads back from the cluster
// (storage/redis/redis_content_format.h, redis_chunk_format.h): bytes that
// any client of the cluster could have written.
//
// Input: the first byte picks the decoder (mod 8), the rest is its input.
// Checks: no crash (ASan/UBSan catch memory bugs and UB); an error is
// DataLoss with a message; a value decoded is canonical under its encoder:
// e = Encode(Decode(bytes)) decodes again, and Encode of that is e. (A
// decoder that accepted what its encoder cannot write, e.g. a field its
// REQUIRES forbid, breaks this.) Any violation aborts.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz redis_format_fuzzer
//   build-fuzz/tests/fuzz/redis_format_fuzzer -max_total_time=60
//       /tmp/corpus tests/fuzz/corpus/redis_format   (one command line)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/redis/redis_chunk_format.h"
#include "storage/redis/redis_content_format.h"

namespace {

namespace redis = ::dedupd::redis;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "redis_format_fuzzer: %s\n", what);
  std::abort();
}

// Checks one decoder/encoder pair on `bytes` (see the file comment).
template <typename T, typename Decode, typename Encode>
void CheckCanonical(absl::string_view bytes, Decode decode, Encode encode) {
  absl::StatusOr<T> v = decode(bytes);
  if (!v.ok()) {
    if (v.status().code() != absl::StatusCode::kDataLoss) Fail("error other than DataLoss");
    if (v.status().message().empty()) Fail("error without a message");
    return;
  }
  const std::string once = encode(*v);
  absl::StatusOr<T> again = decode(once);
  if (!again.ok()) Fail("the encoding of a decoded value does not decode");
  if (encode(*again) != once) Fail("encoding is not stable under decode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0:
      CheckCanonical<redis::RedisContentValue>(bytes, redis::DecodeRedisContentValue,
                                               redis::EncodeRedisContentValue);
      break;
    case 1:
      CheckCanonical<dedupd::FingerprintRecord>(bytes, redis::DecodeFingerprintValue,
                                                redis::EncodeFingerprintValue);
      break;
    case 2:
      CheckCanonical<dedupd::FetchRecord>(bytes, redis::DecodeFetchValue, redis::EncodeFetchValue);
      break;
    case 3:
      CheckCanonical<dedupd::ChunkHolder>(bytes, redis::DecodeChunkHolderMember,
                                          redis::ChunkHolderMember);
      break;
    case 4:
      CheckCanonical<redis::RedisChunkTextValue>(bytes, redis::DecodeRedisChunkTextValue,
                                                 redis::EncodeRedisChunkTextValue);
      break;
    case 5:
      CheckCanonical<dedupd::ChunkManifest>(bytes, redis::DecodeRedisChunkManifest,
                                            redis::EncodeRedisChunkManifest);
      break;
    case 6:
      CheckCanonical<redis::ChunkJournal>(bytes, redis::DecodeChunkJournal,
                                          redis::EncodeChunkJournal);
      break;
    default: {
      const std::optional<redis::BucketEntry> e = redis::DecodeSimHashBucketMember(bytes);
      if (e.has_value() && redis::SimHashBucketMember(e->doc_id, e->simhash) != bytes) {
        Fail("a SimHash bucket member is not its encoding");
      }
      break;
    }
  }
  return 0;
}
