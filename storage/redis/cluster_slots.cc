#include "storage/redis/cluster_slots.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dedupd::redis {
namespace {

// The table-driven CRC16-CCITT (XMODEM) of the Redis Cluster specification,
// Appendix A (Redis's crc16.c): one table lookup per byte, MSB first.
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
    table[i] = crc;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("CLUSTER SLOTS reply: ", what));
}

absl::string_view Str(const redisReply& r) {
  return absl::string_view(r.str, static_cast<size_t>(r.len));
}

// ParseNode reads [host, port, id?, ...] (Redis 7 appends a metadata list,
// which is ignored).
absl::StatusOr<NodeAddress> ParseNode(const redisReply& r, absl::string_view reply_host) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements < 2) {
    return Malformed("a node is not an array of at least [host, port]");
  }
  const redisReply& host = *r.element[0];
  const redisReply& port = *r.element[1];
  NodeAddress node;
  if (host.type == REDIS_REPLY_STRING) {
    node.host = std::string(Str(host));
  } else if (host.type != REDIS_REPLY_NIL) {
    return Malformed("a node's host is not a string");
  }
  if (node.host.empty()) node.host = std::string(reply_host);
  if (port.type != REDIS_REPLY_INTEGER || port.integer < 1 || port.integer > 65535) {
    return Malformed(absl::StrCat("node ", node.host, " has no port in 1..65535"));
  }
  node.port = static_cast<int>(port.integer);
  if (r.elements >= 3) {
    if (r.element[2]->type != REDIS_REPLY_STRING) return Malformed("a node's id is not a string");
    node.id = std::string(Str(*r.element[2]));
  }
  return node;
}

}  // namespace

uint16_t Crc16(absl::string_view data) {
  uint16_t crc = 0;
  for (const char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^
                                kCrc16Table[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff]);
  }
  return crc;
}

absl::string_view HashTag(absl::string_view key) {
  const size_t open = key.find('{');
  if (open == absl::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == absl::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

uint16_t KeySlot(absl::string_view key) {
  // 16384 is a power of two: mod is a mask (the specification's "& 16383").
  return static_cast<uint16_t>(Crc16(HashTag(key)) & (kSlotCount - 1));
}

std::string NodeAddress::HostPort() const { return absl::StrCat(host, ":", port); }

SlotMap::SlotMap() : owner_(kSlotCount, -1) {}

namespace {

// CheckAggregateCounts walks the RESP elements of `resp` (without building
// them) and returns InvalidArgument when an array claims more elements than
// the bytes after its header could hold (each element takes at least 3
// bytes, "+\r\n"). hiredis 0.14's reader allocates an array's element
// vector from the header's count before it reads any element, so
// "*1636210922\r\n" alone would ask for 13 GB; checked here first, no
// allocation exceeds a few times the input. Malformed or truncated input is
// left to the reader, which reports it. O(resp.size()).
absl::Status CheckAggregateCounts(absl::string_view resp) {
  size_t pos = 0;
  uint64_t expected = 1;  // elements still to read
  while (expected > 0 && pos < resp.size()) {
    const size_t eol = resp.find("\r\n", pos);
    if (eol == absl::string_view::npos) return absl::OkStatus();
    const char type = resp[pos];
    const absl::string_view number = resp.substr(pos + 1, eol - pos - 1);
    pos = eol + 2;
    --expected;
    if (type != '*' && type != '$') continue;
    int64_t n = 0;
    if (!absl::SimpleAtoi(number, &n)) return absl::OkStatus();
    if (type == '$') {
      if (n > 0) pos += static_cast<size_t>(n) + 2;
      continue;
    }
    if (n <= 0) continue;
    const size_t left = resp.size() - pos;
    if (static_cast<uint64_t>(n) > left / 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("CLUSTER SLOTS reply: an array of ", n, " elements in ", left, " bytes"));
    }
    expected += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SlotMap> SlotMap::FromClusterSlotsResp(absl::string_view resp,
                                                      absl::string_view reply_host) {
  if (absl::Status counts = CheckAggregateCounts(resp); !counts.ok()) return counts;
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(),
                                                              &redisReaderFree);
  if (reader == nullptr)
    return absl::ResourceExhaustedError("CLUSTER SLOTS: no memory for a reader");
  void* out = nullptr;
  if (redisReaderFeed(reader.get(), resp.data(), resp.size()) != REDIS_OK ||
      redisReaderGetReply(reader.get(), &out) != REDIS_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("CLUSTER SLOTS reply: not the Redis protocol: ", reader->errstr));
  }
  if (out == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("CLUSTER SLOTS reply: truncated (", resp.size(), " bytes)"));
  }
  std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(out),
                                                     &freeReplyObject);
  // Bytes the reader holds beyond the first reply: another reply, or junk.
  if (reader->pos < reader->len) {
    return absl::InvalidArgumentError(
        absl::StrCat("CLUSTER SLOTS reply: ", reader->len - reader->pos, " bytes after the reply"));
  }
  return FromClusterSlots(*reply, reply_host);
}

absl::StatusOr<SlotMap> SlotMap::FromClusterSlots(const redisReply& reply,
                                                  absl::string_view reply_host) {
  if (reply.type == REDIS_REPLY_ERROR) {
    const absl::string_view message = Str(reply);
    if (absl::StrContains(message, "cluster support disabled")) {
      return absl::FailedPreconditionError(
          absl::StrCat("CLUSTER SLOTS at ", reply_host, ": not a cluster node: ", message));
    }
    return absl::UnavailableError(absl::StrCat("CLUSTER SLOTS at ", reply_host, ": ", message));
  }
  if (reply.type != REDIS_REPLY_ARRAY) return Malformed("not an array");
  SlotMap map;
  for (size_t i = 0; i < reply.elements; ++i) {
    const redisReply& entry = *reply.element[i];
    if (entry.type != REDIS_REPLY_ARRAY || entry.elements < 3 ||
        entry.element[0]->type != REDIS_REPLY_INTEGER ||
        entry.element[1]->type != REDIS_REPLY_INTEGER) {
      return Malformed(absl::StrCat("entry ", i, " is not [first, last, master, replicas...]"));
    }
    const long long first = entry.element[0]->integer;
    const long long last = entry.element[1]->integer;
    if (first < 0 || last >= kSlotCount || first > last) {
      return Malformed(absl::StrCat("entry ", i, " has slots ", first, "..", last,
                                    ", not within 0..", kSlotCount - 1));
    }
    SlotRange range;
    range.first = static_cast<int>(first);
    range.last = static_cast<int>(last);
    auto master = ParseNode(*entry.element[2], reply_host);
    if (!master.ok()) return master.status();
    range.master = *std::move(master);
    for (size_t k = 3; k < entry.elements; ++k) {
      auto replica = ParseNode(*entry.element[k], reply_host);
      if (!replica.ok()) return replica.status();
      if (replica->host != "?") range.replicas.push_back(*std::move(replica));
    }
    // Overlaps are checked on every range, owned or not: they mean the reply
    // is broken, not that the cluster is incomplete.
    for (int s = range.first; s <= range.last; ++s) {
      if (map.owner_[s] != -1) {
        return Malformed(absl::StrCat("slot ", s, " is listed twice"));
      }
      map.owner_[s] = -2;  // claimed; set to the range's index below
    }
    const bool known = range.master.host != "?";
    const int16_t index = known ? static_cast<int16_t>(map.ranges_.size()) : int16_t{-1};
    for (int s = range.first; s <= range.last; ++s) map.owner_[s] = index;
    if (known) {
      map.owned_slots_ += range.last - range.first + 1;
      map.ranges_.push_back(std::move(range));
    }
  }
  // Owner() returns pointers into ranges_: sort it once, then renumber.
  std::vector<SlotRange> sorted = std::move(map.ranges_);
  std::sort(sorted.begin(), sorted.end(),
            [](const SlotRange& a, const SlotRange& b) { return a.first < b.first; });
  map.ranges_ = std::move(sorted);
  std::fill(map.owner_.begin(), map.owner_.end(), int16_t{-1});
  for (size_t r = 0; r < map.ranges_.size(); ++r) {
    for (int s = map.ranges_[r].first; s <= map.ranges_[r].last; ++s) {
      map.owner_[s] = static_cast<int16_t>(r);
    }
  }
  return map;
}

const SlotRange* SlotMap::Owner(int slot) const {
  const int16_t index = owner_[static_cast<size_t>(slot)];
  return index < 0 ? nullptr : &ranges_[static_cast<size_t>(index)];
}

std::vector<std::pair<int, int>> SlotMap::UnownedRanges() const {
  std::vector<std::pair<int, int>> gaps;
  for (int s = 0; s < kSlotCount; ++s) {
    if (owner_[s] >= 0) continue;
    if (!gaps.empty() && gaps.back().second == s - 1) {
      gaps.back().second = s;
    } else {
      gaps.emplace_back(s, s);
    }
  }
  return gaps;
}

}  // namespace dedupd::redis
