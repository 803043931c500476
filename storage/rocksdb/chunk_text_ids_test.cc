#include "storage/rocksdb/chunk_text_ids.h"

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dedupd {
namespace {

// A digest whose first 8 bytes are `prefix` (big-endian) and whose last
// byte is `tail`: texts that share a prefix differ only after it.
Sha256Digest Digest(uint64_t prefix, uint8_t tail) {
  Sha256Digest d{};
  for (size_t i = 0; i < 8; ++i) d[i] = static_cast<uint8_t>(prefix >> (56 - 8 * i));
  d[31] = tail;
  return d;
}

TEST(ChunkTextIdsTest, FindsWhatWasInsertedUntilErased) {
  ChunkTextIds ids;
  const Sha256Digest a = Digest(0x0123456789abcdefULL, 1);
  const Sha256Digest b = Digest(0xfedcba9876543210ULL, 2);
  EXPECT_EQ(ids.Find(a), std::nullopt);
  ids.Insert(a, 7);
  ids.Insert(b, 8);
  EXPECT_EQ(ids.Find(a), std::optional<uint32_t>(7));
  EXPECT_EQ(ids.Find(b), std::optional<uint32_t>(8));
  EXPECT_EQ(ids.size(), 2u);
  ids.Erase(a, 9);  // another id: not a's entry
  EXPECT_EQ(ids.Find(a), std::optional<uint32_t>(7));
  ids.Erase(a, 7);
  EXPECT_EQ(ids.Find(a), std::nullopt);
  EXPECT_EQ(ids.Find(b), std::optional<uint32_t>(8));
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids.overflow_size(), 0u);
  EXPECT_GT(ids.MemoryBytes(), 0u);
}

// Texts sharing the digest's first 8 bytes: the first takes the prefix
// entry, later ones the overflow map; Find names each one's own id, and for
// a digest never inserted it may name another text's (the candidate the
// caller checks against the record).
TEST(ChunkTextIdsTest, TextsSharingAPrefixKeepTheirOwnIds) {
  const uint64_t p = 0x5555555555555555ULL;
  ChunkTextIds ids;
  ids.Insert(Digest(p, 1), 1);
  ids.Insert(Digest(p, 2), 2);  // overflow
  ids.Insert(Digest(p, 3), 3);  // overflow
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.overflow_size(), 2u);
  EXPECT_EQ(ids.Find(Digest(p, 1)), std::optional<uint32_t>(1));
  EXPECT_EQ(ids.Find(Digest(p, 2)), std::optional<uint32_t>(2));
  EXPECT_EQ(ids.Find(Digest(p, 3)), std::optional<uint32_t>(3));
  EXPECT_EQ(ids.Find(Digest(p, 9)), std::optional<uint32_t>(1)) << "a candidate only";

  // The prefix owner goes: the overflow texts stay found, the prefix entry
  // is free for the next text.
  ids.Erase(Digest(p, 1), 1);
  EXPECT_EQ(ids.Find(Digest(p, 1)), std::nullopt);
  EXPECT_EQ(ids.Find(Digest(p, 2)), std::optional<uint32_t>(2));
  ids.Insert(Digest(p, 4), 4);
  EXPECT_EQ(ids.overflow_size(), 2u);
  EXPECT_EQ(ids.Find(Digest(p, 4)), std::optional<uint32_t>(4));
  EXPECT_EQ(ids.Find(Digest(p, 3)), std::optional<uint32_t>(3));
  // An overflow text goes: Find falls back to the prefix entry (4's), a
  // candidate the caller rejects by digest.
  ids.Erase(Digest(p, 2), 2);
  EXPECT_EQ(ids.Find(Digest(p, 2)), std::optional<uint32_t>(4));
  EXPECT_EQ(ids.size(), 2u);
  ids.Erase(Digest(p, 3), 3);
  ids.Erase(Digest(p, 4), 4);
  EXPECT_EQ(ids.size(), 0u);
  EXPECT_EQ(ids.Find(Digest(p, 4)), std::nullopt);
}

// Bounded: 4 threads x 5,000 texts of their own, inserted, found, erased
// while the others do the same.
TEST(ChunkTextIdsTest, ConcurrentCallersSeeTheirOwnTexts) {
  ChunkTextIds ids;
  constexpr int kThreads = 4;
  constexpr uint32_t kTexts = 5000;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kTexts; ++i) {
        // Spread over every shard; thread t's texts differ in the tail.
        const Sha256Digest d = Digest(uint64_t{i} * 0x9e3779b97f4a7c15ULL, uint8_t(t));
        const uint32_t id = uint32_t(t) * kTexts + i;
        ids.Insert(d, id);
        if (ids.Find(d) == std::nullopt && errors[t].empty()) {
          errors[t] = absl::StrCat("text ", i, " not found after its insert");
        }
        if (i % 2 == 0) ids.Erase(d, id);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  EXPECT_EQ(ids.size(), size_t{kThreads} * kTexts / 2);
  for (int t = 0; t < kThreads; ++t) {
    for (uint32_t i = 1; i < kTexts; i += 2) {
      const Sha256Digest d = Digest(uint64_t{i} * 0x9e3779b97f4a7c15ULL, uint8_t(t));
      // Odd texts are never erased: each keeps its own id, whether it took
      // the prefix entry or (same i, another thread) an overflow entry.
      ASSERT_EQ(ids.Find(d), std::optional<uint32_t>(uint32_t(t) * kTexts + i));
    }
  }
}

}  // namespace
}  // namespace dedupd
