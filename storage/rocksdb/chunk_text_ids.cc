#include "storage/rocksdb/chunk_text_ids.h"

namespace dedupd {

uint64_t ChunkTextIds::Prefix(const Sha256Digest& sha) {
  uint64_t p = 0;
  for (size_t i = 0; i < 8; ++i) p = (p << 8) | sha[i];
  return p;
}

std::optional<uint32_t> ChunkTextIds::Find(const Sha256Digest& sha) const {
  const uint64_t prefix = Prefix(sha);
  const Shard& shard = ShardOf(prefix);
  absl::ReaderMutexLock lock(&shard.mu);
  if (!shard.overflow.empty()) {
    if (auto it = shard.overflow.find(sha); it != shard.overflow.end()) return it->second;
  }
  if (auto it = shard.by_prefix.find(prefix); it != shard.by_prefix.end()) {
    return it->second;
  }
  return std::nullopt;
}

void ChunkTextIds::Insert(const Sha256Digest& sha, uint32_t id) {
  const uint64_t prefix = Prefix(sha);
  Shard& shard = ShardOf(prefix);
  absl::MutexLock lock(&shard.mu);
  auto [it, inserted] = shard.by_prefix.try_emplace(prefix, id);
  if (!inserted && it->second != id) shard.overflow.insert_or_assign(sha, id);
}

void ChunkTextIds::Erase(const Sha256Digest& sha, uint32_t id) {
  const uint64_t prefix = Prefix(sha);
  Shard& shard = ShardOf(prefix);
  absl::MutexLock lock(&shard.mu);
  if (auto it = shard.overflow.find(sha); it != shard.overflow.end() && it->second == id) {
    shard.overflow.erase(it);
    return;
  }
  if (auto it = shard.by_prefix.find(prefix); it != shard.by_prefix.end() && it->second == id) {
    shard.by_prefix.erase(it);
  }
}

size_t ChunkTextIds::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    absl::ReaderMutexLock lock(&s.mu);
    n += s.by_prefix.size() + s.overflow.size();
  }
  return n;
}

size_t ChunkTextIds::overflow_size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    absl::ReaderMutexLock lock(&s.mu);
    n += s.overflow.size();
  }
  return n;
}

size_t ChunkTextIds::MemoryBytes() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    absl::ReaderMutexLock lock(&s.mu);
    n += s.by_prefix.capacity() * (sizeof(std::pair<uint64_t, uint32_t>) + 1) +
         s.overflow.capacity() * (sizeof(std::pair<Sha256Digest, uint32_t>) + 1);
  }
  return n;
}

}  // namespace dedupd
