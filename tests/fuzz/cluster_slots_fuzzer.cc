// cluster_slots_fuzzer.cc: libFuzzer target for the CLUSTER SLOTS reply
// parser of the Redis Cluster router (storage/redis/cluster_slots.h), which
// reads what a cluster node sends over the network.
//
// Input: the first byte is the length L of the host the reply came from
// (taken mod 16), the next L bytes that host, the rest the reply's bytes in
// the Redis protocol (RESP), parsed by hiredis's reader exactly as a
// connection would; every complete reply in the bytes is given to
// SlotMap::FromClusterSlots.
// Checks: no crash (ASan/UBSan catch memory bugs and UB); an error is
// InvalidArgument, Unavailable or FailedPrecondition with a message; a
// success is a consistent map: ranges within 0..16383, ascending, not
// overlapping, each owner port in 1..65535, Owner(slot) is the range that
// holds the slot for every slot, owned_slots() counts them, and
// UnownedRanges() covers exactly the rest. Also KeySlot of the bytes is
// below 16384 and equals Crc16(HashTag(bytes)) mod 16384. Any violation
// aborts.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz cluster_slots_fuzzer
//   build-fuzz/tests/fuzz/cluster_slots_fuzzer -max_total_time=60
//       /tmp/corpus tests/fuzz/corpus/cluster_slots   (one command line)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/redis/cluster_slots.h"

namespace {

namespace redis = ::dedupd::redis;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "cluster_slots_fuzzer: %s\n", what);
  std::abort();
}

void CheckMap(const redis::SlotMap& map) {
  int previous_last = -1;
  int owned = 0;
  for (const redis::SlotRange& r : map.ranges()) {
    if (r.first < 0 || r.last >= redis::kSlotCount || r.first > r.last) Fail("range bounds");
    if (r.first <= previous_last) Fail("ranges overlap or are not ascending");
    if (r.master.port < 1 || r.master.port > 65535) Fail("owner port");
    previous_last = r.last;
    owned += r.last - r.first + 1;
  }
  if (owned != map.owned_slots()) Fail("owned_slots() is not the ranges' size");
  if (map.complete() != (owned == redis::kSlotCount)) Fail("complete()");
  std::vector<bool> unowned(redis::kSlotCount, false);
  int unowned_count = 0;
  for (const auto& [first, last] : map.UnownedRanges()) {
    if (first < 0 || last >= redis::kSlotCount || first > last) Fail("unowned range bounds");
    for (int s = first; s <= last; ++s) {
      if (unowned[s]) Fail("unowned ranges overlap");
      unowned[s] = true;
      ++unowned_count;
    }
  }
  if (unowned_count + owned != redis::kSlotCount) Fail("owned and unowned do not cover 16384");
  for (int s = 0; s < redis::kSlotCount; ++s) {
    const redis::SlotRange* r = map.Owner(s);
    if ((r == nullptr) != unowned[s]) Fail("Owner() disagrees with UnownedRanges()");
    if (r != nullptr && (s < r->first || s > r->last)) Fail("Owner() names a range without slot");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const uint16_t slot = redis::KeySlot(input);
  if (slot >= redis::kSlotCount || slot != redis::Crc16(redis::HashTag(input)) % 16384) {
    Fail("KeySlot");
  }
  if (size == 0) return 0;
  const size_t host_len = std::min<size_t>(data[0] % 16, size - 1);
  const std::string host(input.substr(1, host_len));
  absl::StatusOr<redis::SlotMap> map =
      redis::SlotMap::FromClusterSlotsResp(input.substr(1 + host_len), host);
  if (map.ok()) {
    CheckMap(*map);
    return 0;
  }
  const absl::StatusCode code = map.status().code();
  if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kUnavailable &&
      code != absl::StatusCode::kFailedPrecondition) {
    Fail("an undocumented status code");
  }
  if (map.status().message().empty()) Fail("an error without a message");
  return 0;
}
