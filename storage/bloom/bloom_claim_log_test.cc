// Tests of the claim-log format (storage/bloom/bloom_claim_log.h): golden bytes,
// round trips, and the torn-tail / DataLoss rules of ParseRecords.
#include "storage/bloom/bloom_claim_log.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::bloom_claim_log {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kBumpMessage[] =
    "the claim-log bytes changed: changing them requires bumping "
    "bloom_claim_log::kVersion, documenting the new layout in "
    "docs/bloom_url_store.md, and only then updating this golden value";

LogHeader GoldenHeader() {
  LogHeader header;
  header.generation = 7;
  header.num_blocks = 2;
  header.num_probes = 6;
  return header;
}

// The golden values were computed with the reference xxHash library
// (libxxhash 0.8.1, XXH64 with seed kChecksumSeed) over the documented
// layout, independently of this code.
TEST(BloomClaimLogGoldenTest, VersionIsPinned) {
  EXPECT_EQ(kVersion, 1u) << "bumped the version: update the golden values "
                             "and docs/bloom_url_store.md";
  EXPECT_EQ(kHeaderBytes, 40u);
}

TEST(BloomClaimLogGoldenTest, Header) {
  EXPECT_EQ(absl::BytesToHexString(EncodeLogHeader(GoldenHeader())),
            "4444434c41494d53"   // "DDCLAIMS"
            "01000000"           // version 1
            "06000000"           // num_probes 6
            "0700000000000000"   // generation 7
            "0200000000000000"   // num_blocks 2
            "2d89b2416d20b2f5")  // XXH64 of the 32 bytes above
      << kBumpMessage;
}

TEST(BloomClaimLogGoldenTest, Records) {
  std::string out;
  AppendRecords({0x0102030405060708ULL, 0xfffffffffffffffeULL}, &out);
  AppendRecords({0x1111111111111111ULL}, &out);
  EXPECT_EQ(absl::BytesToHexString(out),
            "02000000"           // count 2
            "0807060504030201"   // hash 0x0102030405060708
            "feffffffffffffff"   // hash 0xfffffffffffffffe
            "ec42a60d7dd5ef8f"   // XXH64 of the 20 bytes above
            "01000000"           // count 1
            "1111111111111111"   // hash
            "9be537cff5c3cab4")  // XXH64 of the 12 bytes above
      << kBumpMessage;
}

TEST(BloomClaimLogTest, HeaderRoundTrips) {
  ASSERT_OK_AND_ASSIGN(LogHeader back, ParseLogHeader(EncodeLogHeader(GoldenHeader())));
  EXPECT_EQ(back.generation, 7u);
  EXPECT_EQ(back.num_blocks, 2u);
  EXPECT_EQ(back.num_probes, 6u);
}

TEST(BloomClaimLogTest, BadHeaders) {
  const std::string good = EncodeLogHeader(GoldenHeader());
  struct Case {
    std::string name;
    std::string bytes;
    absl::StatusCode code;
    std::string message;
  };
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  std::string bad_version = good;
  bad_version[8] = 2;
  std::string bad_field = good;
  bad_field[16] ^= 1;  // generation
  std::string bad_checksum = good;
  bad_checksum[39] ^= 0x80;
  const std::vector<Case> cases = {
      {"empty", "", absl::StatusCode::kDataLoss, "0 bytes"},
      {"short", good.substr(0, 39), absl::StatusCode::kDataLoss, "39 bytes"},
      {"magic", bad_magic, absl::StatusCode::kDataLoss, "magic"},
      {"version", bad_version, absl::StatusCode::kFailedPrecondition, "version 2"},
      {"field", bad_field, absl::StatusCode::kDataLoss, "checksum"},
      {"checksum", bad_checksum, absl::StatusCode::kDataLoss, "checksum"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseLogHeader(c.bytes),
                StatusIs(c.code, AllOf(HasSubstr("claim log header: "), HasSubstr(c.message))))
        << c.name;
  }
}

TEST(BloomClaimLogTest, RecordsRoundTripAndSplitAtTheLimit) {
  std::vector<uint64_t> hashes;
  for (uint64_t i = 0; i < kMaxRecordKeys + 3; ++i) {
    hashes.push_back(i * 0x9e3779b97f4a7c15ULL);
  }
  std::string body;
  AppendRecords(hashes, &body);
  AppendRecords({}, &body);  // nothing
  AppendRecords({42}, &body);
  EXPECT_EQ(body.size(), RecordBytes(kMaxRecordKeys) + RecordBytes(3) + RecordBytes(1));
  ASSERT_OK_AND_ASSIGN(ParsedRecords parsed, ParseRecords(body, 0));
  hashes.push_back(42);
  EXPECT_EQ(parsed.key_hashes, hashes);
  EXPECT_THAT(parsed.record_keys, ElementsAre(kMaxRecordKeys, 3u, 1u));
  EXPECT_EQ(parsed.valid_bytes, body.size());
  EXPECT_FALSE(parsed.torn_tail);
}

TEST(BloomClaimLogTest, ParseLogCountsOffsetsFromTheFileStart) {
  std::string log = EncodeLogHeader(GoldenHeader());
  AppendRecords({1, 2}, &log);
  ASSERT_OK_AND_ASSIGN(ParsedLog parsed, ParseLog(log));
  EXPECT_EQ(parsed.header.generation, 7u);
  EXPECT_THAT(parsed.records.key_hashes, ElementsAre(1u, 2u));
  EXPECT_EQ(parsed.records.valid_bytes, RecordBytes(2));

  std::string damaged = log;
  AppendRecords({3}, &damaged);
  damaged[kHeaderBytes + 5] ^= 1;  // inside the first record's first hash
  EXPECT_THAT(ParseLog(damaged), StatusIs(absl::StatusCode::kDataLoss,
                                          HasSubstr(absl::StrCat("offset ", kHeaderBytes, ":"))));
}

// Every way a body can end or be damaged, and what the parser makes of it.
TEST(BloomClaimLogTest, TornTailsAndDamage) {
  std::string two;  // two records: 1 key (20 bytes), 2 keys (28 bytes)
  AppendRecords({11}, &two);
  AppendRecords({21, 22}, &two);
  const size_t first = RecordBytes(1);
  ASSERT_EQ(two.size(), first + RecordBytes(2));

  auto flip = [](std::string s, size_t at) {
    s[at] ^= 0x40;
    return s;
  };
  struct Case {
    std::string name;
    std::string body;
    // OK cases: the keys kept and whether the tail is torn.
    std::vector<uint64_t> keys;
    bool torn = false;
    // Error cases: DataLoss mentioning this offset.
    int64_t bad_offset = -1;
  };
  const std::vector<Case> cases = {
      {"empty", "", {}, false},
      {"whole", two, {11, 21, 22}, false},
      {"cut in the count", two.substr(0, first + 3), {11}, true},
      {"cut in a hash", two.substr(0, first + 9), {11}, true},
      {"cut in the checksum", two.substr(0, two.size() - 1), {11}, true},
      {"last record's hash damaged", flip(two, first + 6), {11}, true},
      {"last record's checksum damaged", flip(two, two.size() - 2), {11}, true},
      {"zero-filled tail", two + std::string(37, '\0'), {11, 21, 22}, true},
      {"zero-filled after a cut", two.substr(0, first + 5) + std::string(9, '\0'), {11}, true},
      {"first record damaged, more follow", flip(two, 6), {}, false, 0},
      {"first record's checksum damaged", flip(two, first - 1), {}, false, 0},
      {"count 0 then data", std::string(4, '\0') + two, {}, false, 0},
      {"count above the limit",
       two.substr(0, first) + std::string("\x01\x00\x01\x00", 4) + std::string(8, 'x'),
       {},
       false,
       static_cast<int64_t>(first)},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ParsedRecords> parsed = ParseRecords(c.body, 0);
    if (c.bad_offset >= 0) {
      EXPECT_THAT(parsed, StatusIs(absl::StatusCode::kDataLoss,
                                   HasSubstr(absl::StrCat("record at offset ", c.bad_offset, ":"))))
          << c.name;
      continue;
    }
    ASSERT_THAT(parsed, IsOk()) << c.name;
    EXPECT_EQ(parsed->key_hashes, c.keys) << c.name;
    EXPECT_EQ(parsed->torn_tail, c.torn) << c.name;
    if (!c.torn) {
      EXPECT_EQ(parsed->valid_bytes, c.body.size()) << c.name;
    }
    // valid_bytes ends at a record boundary: the whole records kept.
    size_t want_valid = 0;
    for (uint32_t n : parsed->record_keys) want_valid += RecordBytes(n);
    EXPECT_EQ(parsed->valid_bytes, want_valid) << c.name;
  }
}

TEST(BloomClaimLogTest, BaseOffsetIsAddedToErrorOffsets) {
  std::string body;
  AppendRecords({1}, &body);
  AppendRecords({2}, &body);
  body[2] ^= 1;  // first record's count: 1 → 65537 (above the limit)
  EXPECT_THAT(
      ParseRecords(body, 1000),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("record at offset 1000: bad key count")));
  EXPECT_THAT(ParseRecords("", 5), IsOk());
  ASSERT_OK_AND_ASSIGN(ParsedRecords none, ParseRecords("", 5));
  EXPECT_THAT(none.key_hashes, IsEmpty());
}

}  // namespace
}  // namespace dedupd::bloom_claim_log
