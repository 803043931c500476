// cluster_slots.h: where a key lives in a Redis Cluster. The key -> slot
// function (CRC16 with hash tags, as every Redis Cluster client computes it)
// and the slot map read from a CLUSTER SLOTS reply: which master (and which
// replicas) serve each of the 16384 slots. The first pieces of the cluster
// router the Redis Cluster store backend will use (docs/design.md, "Scaling
// past one machine"); hiredis 0.14 has no cluster support of its own.
//
// Example:
//   uint16_t slot = redis::KeySlot("{user1000}.following");  // 3443
//   redisReply* reply = static_cast<redisReply*>(redisCommand(c, "CLUSTER SLOTS"));
//   absl::StatusOr<redis::SlotMap> map = redis::SlotMap::FromClusterSlots(*reply, "10.0.0.5");
//   freeReplyObject(reply);
//   if (map.ok() && map->complete()) {
//     const redis::SlotRange* owner = map->Owner(slot);  // owner->master.port, ...
//   }
//
// Thread safety: the functions are pure and thread-safe; a SlotMap is a
// value: const methods are thread-safe, a mutated one is not.
#ifndef DEDUPD_STORAGE_REDIS_CLUSTER_SLOTS_H_
#define DEDUPD_STORAGE_REDIS_CLUSTER_SLOTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

// hiredis's reply type (hiredis/read.h); only cluster_slots.cc includes
// hiredis.
struct redisReply;

namespace dedupd::redis {

// kSlotCount: the number of hash slots of a Redis Cluster (fixed by the
// protocol).
inline constexpr int kSlotCount = 16384;

// Crc16 returns the CRC16-CCITT (XMODEM) of `data`: polynomial 0x1021,
// initial value 0, no reflection, no final xor; the checksum the Redis
// Cluster specification names ("Keys distribution model", Appendix A).
// Crc16("123456789") == 0x31C3.
uint16_t Crc16(absl::string_view data);

// HashTag returns the part of `key` that is hashed: if `key` has a '{' and
// a '}' after it with at least one character between them, the characters
// between the first '{' and the first '}' after it; else the whole key.
// The returned view points into `key`.
// Example: HashTag("foo{{bar}}zap") == "{bar"; HashTag("foo{}{bar}") == "foo{}{bar}".
absl::string_view HashTag(absl::string_view key);

// KeySlot returns the cluster slot of `key`: Crc16(HashTag(key)) mod 16384,
// the value `CLUSTER KEYSLOT key` answers. Keys with the same hash tag share
// a slot, so one Lua script or MULTI may touch them all.
uint16_t KeySlot(absl::string_view key);

// NodeAddress: one node as CLUSTER SLOTS names it.
struct NodeAddress {
  std::string host;  // IP or host name
  int port = 0;
  std::string id;  // the node's 40-character cluster id ("" if not sent)

  std::string HostPort() const;  // "host:port"
  friend bool operator==(const NodeAddress& a, const NodeAddress& b) {
    return a.host == b.host && a.port == b.port && a.id == b.id;
  }
};

// SlotRange: slots [first, last] and the nodes serving them.
struct SlotRange {
  int first = 0;
  int last = 0;
  NodeAddress master;
  std::vector<NodeAddress> replicas;
};

// SlotMap: slot -> serving nodes, as one node saw the cluster when it
// answered CLUSTER SLOTS. May be incomplete: a slot with no owner (not
// assigned, or its master's endpoint unknown) has Owner() == nullptr, and
// a router must answer its keys UNAVAILABLE rather than guess.
class SlotMap {
 public:
  SlotMap();

  // FromClusterSlots parses a CLUSTER SLOTS reply. `reply_host` is the host
  // the reply came from: a node listed with an empty host is that host (the
  // protocol's "same endpoint as the one asked"). A node listed with host
  // "?" (endpoint unknown) leaves its range without an owner when it is the
  // master and is dropped when it is a replica.
  // Errors: FailedPrecondition when the node answered that cluster support
  // is disabled; Unavailable for another error reply (e.g. CLUSTERDOWN,
  // LOADING: ask again or ask another node); InvalidArgument when the reply
  // does not have the documented shape (a range outside 0..16383 or
  // backwards, ranges that overlap, a port outside 1..65535, wrong types).
  static absl::StatusOr<SlotMap> FromClusterSlots(const redisReply& reply,
                                                  absl::string_view reply_host);

  // FromClusterSlotsResp parses `resp`, the bytes of one CLUSTER SLOTS
  // reply as a node sends them (RESP, read with hiredis's reply reader, as
  // a connection reads them), then as FromClusterSlots. Errors: those of
  // FromClusterSlots; InvalidArgument when the bytes are not exactly one
  // complete reply (a protocol error, a truncated reply, bytes after it).
  static absl::StatusOr<SlotMap> FromClusterSlotsResp(absl::string_view resp,
                                                      absl::string_view reply_host);

  // Owner returns the range that holds `slot`, or nullptr when no node
  // serves it. The pointer lives as long as this map.
  // REQUIRES: 0 <= slot < kSlotCount.
  const SlotRange* Owner(int slot) const;

  // complete: every one of the 16384 slots has an owner.
  bool complete() const { return owned_slots_ == kSlotCount; }
  int owned_slots() const { return owned_slots_; }

  // UnownedRanges returns the slots without an owner as inclusive
  // [first, last] ranges, ascending; empty when complete().
  std::vector<std::pair<int, int>> UnownedRanges() const;

  // ranges: the owned ranges, ascending by first slot.
  const std::vector<SlotRange>& ranges() const { return ranges_; }

 private:
  std::vector<SlotRange> ranges_;
  std::vector<int16_t> owner_;  // kSlotCount entries: index into ranges_, or -1
  int owned_slots_ = 0;
};

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_CLUSTER_SLOTS_H_
