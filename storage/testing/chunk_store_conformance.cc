#include "storage/testing/chunk_store_conformance.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/text/content_fingerprint.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_set.h"
#include "core/text/simhash.h"
#include "gmock/gmock.h"
#include "storage/minhash_near_index.h"
#include "storage/testing/near_texts.h"
#include "storage/url_store.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {

void ChunkStoreConformanceTest::SetUp() {
  ASSERT_OK_AND_ASSIGN(harness_, GetParam().make());
  ASSERT_NE(harness_, nullptr);
}

void ChunkStoreConformanceTest::TearDown() { harness_.reset(); }

namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

constexpr uint64_t kFp = 0x0123456789abcdefULL;
// Far from kFp and from each other (Hamming distance 32).
constexpr uint64_t kFarA = kFp ^ 0xffffffff00000000ULL;
constexpr uint64_t kFarB = kFp ^ 0x00000000ffffffffULL;

// A chunk whose text is identified by `text` (its digest is the SHA-256 of
// that string) with SimHash `simhash`.
ChunkInput Chunk(const std::string& id, const std::string& text, uint64_t simhash,
                 int max_distance = 3) {
  return ChunkInput{id, Sha256(text), simhash, max_distance};
}

ChunkDocument Doc(const std::string& url, std::vector<ChunkInput> chunks,
                  const std::string& name_space = "") {
  return ChunkDocument{url, std::move(chunks), name_space};
}

// `doc` sent by a request with the claim id whose hash is `claim_id_hash`.
ChunkDocument WithClaim(ChunkDocument doc, uint64_t claim_id_hash) {
  doc.claim_id_hash = claim_id_hash;
  return doc;
}

ChunkAnswer RunCheck(ChunkStore& store, const ChunkDocument& doc, bool claim, absl::Time now) {
  ChunkAnswer answer;
  EXPECT_THAT(store.CheckChunks(doc, claim, now, &answer), IsOk());
  EXPECT_THAT(answer.outcomes, SizeIs(doc.chunks.size()));
  answer.outcomes.resize(doc.chunks.size());
  return answer;
}
ChunkAnswer Claim(ChunkStore& store, const ChunkDocument& doc, absl::Time now) {
  return RunCheck(store, doc, true, now);
}
ChunkAnswer Peek(ChunkStore& store, const ChunkDocument& doc) {
  return RunCheck(store, doc, false, T(0));
}

void ExpectDuplicate(const ChunkOutcome& o, ChunkVerdict verdict, const std::string& url,
                     const std::string& id, int distance) {
  EXPECT_EQ(o.verdict, verdict);
  EXPECT_EQ(o.duplicate_document_url, url);
  EXPECT_EQ(o.duplicate_chunk_id, id);
  EXPECT_EQ(o.distance, distance);
}

TEST_P(ChunkStoreConformanceTest, NewThenExactDuplicateOfAnotherDocument) {
  ChunkAnswer a =
      Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA)}), T(100));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(a.outcomes[0].first_seen, T(100));
  EXPECT_EQ(a.outcomes[1].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(a.replaced_chunks, 0u);

  ChunkAnswer b = Claim(
      chunks(), Doc("https://b/", {Chunk("x", "t2", kFarA), Chunk("y", "t3", kFarB)}), T(200));
  ExpectDuplicate(b.outcomes[0], ChunkVerdict::kExactDuplicate, "https://a/", "1", 0);
  EXPECT_EQ(b.outcomes[0].first_seen, T(100));
  EXPECT_EQ(b.outcomes[0].other_holders, 1u);
  EXPECT_EQ(b.outcomes[1].verdict, ChunkVerdict::kNew);

  // A third holder: still the first one's duplicate, two others hold it.
  ChunkAnswer c = Peek(chunks(), Doc("https://c/", {Chunk("0", "t2", kFarA)}));
  ExpectDuplicate(c.outcomes[0], ChunkVerdict::kExactDuplicate, "https://a/", "1", 0);
  EXPECT_EQ(c.outcomes[0].other_holders, 2u);
}

TEST_P(ChunkStoreConformanceTest, DuplicatesWithinTheRequestInBothModes) {
  const ChunkDocument doc =
      Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA), Chunk("2", "t1", kFp),
                         Chunk("3", "t4", kFp ^ 0b101)});
  for (bool claim : {false, true}) {
    SCOPED_TRACE(claim ? "claim" : "peek");
    ChunkAnswer a = RunCheck(chunks(), doc, claim, T(100));
    EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
    EXPECT_EQ(a.outcomes[1].verdict, ChunkVerdict::kNew);
    ExpectDuplicate(a.outcomes[2], ChunkVerdict::kExactDuplicate, "https://a/", "0", 0);
    ExpectDuplicate(a.outcomes[3], ChunkVerdict::kNearDuplicate, "https://a/", "0", 2);
    EXPECT_EQ(a.outcomes[3].duplicate_simhash, kFp);
  }
}

TEST_P(ChunkStoreConformanceTest, ResendingReplacesInsteadOfDuplicatingItself) {
  const ChunkDocument doc = Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA)});
  Claim(chunks(), doc, T(100));
  ChunkAnswer again = Claim(chunks(), doc, T(200));
  EXPECT_EQ(again.replaced_chunks, 2u);
  EXPECT_THAT(again.removed_chunk_ids, IsEmpty()) << "sent again unchanged: every vector stays";
  for (const ChunkOutcome& o : again.outcomes) {
    EXPECT_EQ(o.verdict, ChunkVerdict::kNew);
    EXPECT_EQ(o.first_seen, T(100)) << "a re-sent text keeps its age";
    EXPECT_EQ(o.other_holders, 0u);
  }
  // A changed chunk is not a near duplicate of the version it replaces.
  ChunkAnswer edited =
      Claim(chunks(),
            Doc("https://a/", {Chunk("0", "t1-edited", kFp ^ 1), Chunk("1", "t2", kFarA)}), T(300));
  EXPECT_EQ(edited.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_THAT(edited.removed_chunk_ids, ElementsAre("0")) << "its text changed";
  EXPECT_EQ(edited.outcomes[0].first_seen, T(300));
  EXPECT_EQ(edited.outcomes[1].first_seen, T(100));
  // The replaced text is gone: nothing matches it any more.
  ChunkAnswer b = Peek(chunks(), Doc("https://b/", {Chunk("0", "t1", kFp ^ 0x300)}));
  ExpectDuplicate(b.outcomes[0], ChunkVerdict::kNearDuplicate, "https://a/", "0", 3);
}

TEST_P(ChunkStoreConformanceTest, TheFirstHolderStaysOwnerAcrossRecrawls) {
  Claim(chunks(), Doc("https://a/", {Chunk("0", "preamble", kFp)}), T(100));
  ChunkAnswer b = Claim(chunks(), Doc("https://b/", {Chunk("0", "preamble", kFp)}), T(200));
  ExpectDuplicate(b.outcomes[0], ChunkVerdict::kExactDuplicate, "https://a/", "0", 0);
  // Re-crawling the owner: still NEW for it (it holds the oldest copy)...
  ChunkAnswer a = Claim(chunks(), Doc("https://a/", {Chunk("0", "preamble", kFp)}), T(300));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(a.outcomes[0].other_holders, 1u);
  // ...and re-crawling the copy: still the owner's duplicate.
  b = Claim(chunks(), Doc("https://b/", {Chunk("0", "preamble", kFp)}), T(400));
  ExpectDuplicate(b.outcomes[0], ChunkVerdict::kExactDuplicate, "https://a/", "0", 0);
  EXPECT_EQ(b.outcomes[0].first_seen, T(100));
}

TEST_P(ChunkStoreConformanceTest, OwnershipPassesToTheNextHolderWhenTheOwnerDropsIt) {
  Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp)}), T(100));
  Claim(chunks(), Doc("https://b/", {Chunk("7", "t1", kFp)}), T(200));
  ChunkAnswer a = Claim(chunks(), Doc("https://a/", {Chunk("0", "t9", kFarA)}), T(300));
  EXPECT_EQ(a.replaced_chunks, 1u);
  ChunkAnswer c = Peek(chunks(), Doc("https://c/", {Chunk("0", "t1", kFp)}));
  ExpectDuplicate(c.outcomes[0], ChunkVerdict::kExactDuplicate, "https://b/", "7", 0);
  EXPECT_EQ(c.outcomes[0].first_seen, T(200));
}

TEST_P(ChunkStoreConformanceTest, RemovedChunkIdsAreTheStoredChunksNotSentAgainUnchanged) {
  Claim(chunks(),
        Doc("https://a/", {Chunk("a", "t1", kFp), Chunk("b", "t2", kFarA), Chunk("c", "t3", ~kFp)}),
        T(100));
  // b's text changes, c is gone, d is new; a is sent again unchanged.
  const ChunkDocument next =
      Doc("https://a/", {Chunk("d", "t4", kFarA ^ 0xff00), Chunk("b", "t2x", kFarA ^ 0xf0f0f0),
                         Chunk("a", "t1", kFp)});
  EXPECT_THAT(Peek(chunks(), next).removed_chunk_ids, ElementsAre("b", "c"))
      << "a peek says what a claim would remove";
  ChunkAnswer claimed = Claim(chunks(), next, T(200));
  EXPECT_THAT(claimed.removed_chunk_ids, ElementsAre("b", "c"));
  EXPECT_EQ(claimed.replaced_chunks, 3u);
  EXPECT_THAT(Claim(chunks(), Doc("https://a/", {}), T(300)).removed_chunk_ids,
              ElementsAre("d", "b", "a"))
      << "an empty resend removes every stored chunk, in stored order";
  EXPECT_THAT(Claim(chunks(), Doc("https://new/", {Chunk("0", "t9", kFp ^ 0xff)}), T(300))
                  .removed_chunk_ids,
              IsEmpty());
}

TEST_P(ChunkStoreConformanceTest, EmptyResendDeletesTheDocumentsChunks) {
  Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA)}), T(100));
  ChunkAnswer gone = Claim(chunks(), Doc("https://a/", {}), T(200));
  EXPECT_EQ(gone.replaced_chunks, 2u);
  ChunkAnswer b =
      Peek(chunks(), Doc("https://b/", {Chunk("0", "t1", kFp), Chunk("1", "t3", kFarA ^ 1)}));
  EXPECT_EQ(b.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(b.outcomes[1].verdict, ChunkVerdict::kNew) << "its text left the index";
  EXPECT_EQ(Claim(chunks(), Doc("https://a/", {}), T(300)).replaced_chunks, 0u);
}

TEST_P(ChunkStoreConformanceTest, NearDuplicatesNearestFirstThenOldest) {
  Claim(chunks(), Doc("https://a/", {Chunk("0", "ta", kFp ^ 0b111)}), T(100));
  Claim(chunks(), Doc("https://b/", {Chunk("0", "tb", kFp ^ 0b11000)}), T(200));
  Claim(chunks(), Doc("https://c/", {Chunk("0", "tc", kFp ^ 0b1100000)}), T(300));
  ChunkAnswer q =
      Peek(chunks(), Doc("https://q/", {Chunk("0", "tq", kFp), Chunk("1", "tq2", kFp ^ 0b1111, 0),
                                        Chunk("2", "tq3", kFp ^ 0b1111, -1)}));
  ExpectDuplicate(q.outcomes[0], ChunkVerdict::kNearDuplicate, "https://b/", "0", 2);
  EXPECT_EQ(q.outcomes[0].first_seen, T(200));
  EXPECT_EQ(q.outcomes[1].verdict, ChunkVerdict::kNew) << "distance 0 allowed only";
  EXPECT_EQ(q.outcomes[2].verdict, ChunkVerdict::kNew) << "exact matches only";
  // Beyond the distance: new.
  ChunkAnswer far = Peek(chunks(), Doc("https://q/", {Chunk("0", "tf", kFp ^ 0xf0000)}));
  EXPECT_EQ(far.outcomes[0].verdict, ChunkVerdict::kNew);
  // Ties at one distance go to the oldest holder.
  Claim(chunks(), Doc("https://d/", {Chunk("0", "td", kFp ^ 0b11 << 20)}), T(50));
  q = Peek(chunks(), Doc("https://q/", {Chunk("0", "tq", kFp)}));
  ExpectDuplicate(q.outcomes[0], ChunkVerdict::kNearDuplicate, "https://d/", "0", 2);
}

TEST_P(ChunkStoreConformanceTest, ExactOnlyChunksStillMatchExactly) {
  Claim(chunks(), Doc("https://a/", {Chunk("h", "short heading", kFp, -1)}), T(100));
  ChunkAnswer b = Peek(chunks(), Doc("https://b/", {Chunk("h", "short heading", kFp, -1)}));
  ExpectDuplicate(b.outcomes[0], ChunkVerdict::kExactDuplicate, "https://a/", "h", 0);
}

TEST_P(ChunkStoreConformanceTest, PeekRecordsNothing) {
  Peek(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp)}));
  ChunkAnswer b = Peek(chunks(), Doc("https://b/", {Chunk("0", "t1", kFp)}));
  EXPECT_EQ(b.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(b.outcomes[0].first_seen, absl::InfinitePast());
  EXPECT_EQ(b.replaced_chunks, 0u);
}

TEST_P(ChunkStoreConformanceTest, RejectsBrokenDocuments) {
  ChunkAnswer answer;
  EXPECT_THAT(chunks().CheckChunks(Doc("", {Chunk("0", "t", kFp)}), true, T(1), &answer),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("document_url")));
  EXPECT_THAT(chunks().CheckChunks(Doc("https://a/", {Chunk("x", "t", kFp), Chunk("x", "u", kFp)}),
                                   true, T(1), &answer),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("chunk 1: chunk id \"x\" repeats chunk 0's")));
  EXPECT_THAT(chunks().CheckChunks(Doc("https://a/", {Chunk("", "t", kFp)}), true, T(1), &answer),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chunk id is empty")));
  EXPECT_THAT(
      chunks().CheckChunks(Doc("https://a/", {Chunk("0", "t", kFp, 4)}), true, T(1), &answer),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_distance 4")));
  // Nothing was recorded by the rejected claims.
  ChunkAnswer b = Peek(chunks(), Doc("https://b/", {Chunk("0", "t", kFp)}));
  EXPECT_EQ(b.outcomes[0].verdict, ChunkVerdict::kNew);
}

TEST_P(ChunkStoreConformanceTest, ConcurrentClaimsOfOneTextHaveOneOwner) {
  constexpr int kThreads = 8;
  std::vector<ChunkAnswer> answers(kThreads);
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      // The shared chunk signed and near by Jaccard too: the signature
      // is recorded once, with the one kNew.
      ChunkInput shared = Chunk("0", "shared", kFp);
      shared.minhash = MinHasher().Sign("shared");
      shared.min_jaccard = 0.8;
      answers[i] =
          Claim(chunks(),
                Doc(absl::StrCat("https://d", i, "/"),
                    {shared, Chunk("1", absl::StrCat("own", i), kFarA ^ (uint64_t{1} << (i + 8)))}),
                T(100 + i));
    });
  }
  go.store(true);
  for (std::thread& t : threads) t.join();
  int owners = 0;
  std::string owner;
  for (int i = 0; i < kThreads; ++i) {
    if (answers[i].outcomes[0].verdict == ChunkVerdict::kNew) {
      ++owners;
      owner = absl::StrCat("https://d", i, "/");
    }
  }
  ASSERT_EQ(owners, 1);
  for (int i = 0; i < kThreads; ++i) {
    const ChunkOutcome& o = answers[i].outcomes[0];
    if (o.verdict == ChunkVerdict::kNew) continue;
    ExpectDuplicate(o, ChunkVerdict::kExactDuplicate, owner, "0", 0);
  }
  ChunkAnswer late = Peek(chunks(), Doc("https://late/", {Chunk("0", "shared", kFp)}));
  ExpectDuplicate(late.outcomes[0], ChunkVerdict::kExactDuplicate, owner, "0", 0);
  EXPECT_EQ(late.outcomes[0].other_holders, static_cast<uint64_t>(kThreads));
}

TEST_P(ChunkStoreConformanceTest, ReopenKeepsChunksAndTheIndex) {
  Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA)}), T(100));
  Claim(chunks(), Doc("https://b/", {Chunk("0", "t1", kFp)}), T(200));
  Claim(chunks(), Doc("https://gone/", {Chunk("0", "t3", kFarB)}), T(250));
  Claim(chunks(), Doc("https://gone/", {}), T(260));
  ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
  if (!reopened) GTEST_SKIP() << GetParam().name << " does not persist";
  ChunkAnswer q =
      Peek(chunks(), Doc("https://q/", {Chunk("0", "t1", kFp), Chunk("1", "t2x", kFarA ^ 0b11),
                                        Chunk("2", "t3", kFarB ^ 1)}));
  ExpectDuplicate(q.outcomes[0], ChunkVerdict::kExactDuplicate, "https://a/", "0", 0);
  EXPECT_EQ(q.outcomes[0].other_holders, 2u);
  EXPECT_EQ(q.outcomes[0].first_seen, T(100));
  ExpectDuplicate(q.outcomes[1], ChunkVerdict::kNearDuplicate, "https://a/", "1", 2);
  EXPECT_EQ(q.outcomes[2].verdict, ChunkVerdict::kNew);
  // The re-sent owner keeps its age after the restart too.
  ChunkAnswer a = Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp)}), T(300));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(a.outcomes[0].first_seen, T(100));
  EXPECT_EQ(a.replaced_chunks, 2u);
}

TEST_P(ChunkStoreConformanceTest, NamespacesNeverSeeEachOthersChunks) {
  ChunkAnswer a = Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp)}, "crawl-a"), T(100));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  // The same text in the empty namespace, and the same document URL in
  // another namespace: NEW, a document of its own.
  a = Claim(chunks(), Doc("https://b/", {Chunk("0", "t1", kFp)}), T(110));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  a = Claim(chunks(), Doc("https://a/", {Chunk("x", "t2", kFarA)}, "crawl-b"), T(120));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(a.replaced_chunks, 0u);
  EXPECT_THAT(a.removed_chunk_ids, IsEmpty());
  // Within crawl-a, its chunk is found, exactly and near.
  a = Peek(chunks(),
           Doc("https://c/", {Chunk("0", "t1", kFp), Chunk("1", "near", kFp ^ 0x1)}, "crawl-a"));
  ExpectDuplicate(a.outcomes[0], ChunkVerdict::kExactDuplicate, "https://a/", "0", 0);
  ExpectDuplicate(a.outcomes[1], ChunkVerdict::kNearDuplicate, "https://a/", "0", 1);
  // crawl-b's document https://a/ did not replace crawl-a's.
  a = Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp)}, "crawl-a"), T(130));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(a.replaced_chunks, 1u);
  EXPECT_EQ(a.outcomes[0].first_seen, T(100));
  // A namespace with nothing recorded.
  a = Peek(chunks(), Doc("https://d/", {Chunk("0", "t1", kFp)}, "crawl-z"));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
}

TEST_P(ChunkStoreConformanceTest, BadNamespaceFailsTheDocument) {
  ChunkAnswer answer;
  EXPECT_THAT(chunks().CheckChunks(Doc("https://a/", {Chunk("0", "t", kFp)}, "no/slash"), true,
                                   T(1), &answer),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("namespace: byte 2")));
  EXPECT_THAT(chunks().CheckChunks(Doc("https://a/", {Chunk("0", "t", kFp)}, std::string(65, 'n')),
                                   true, T(1), &answer),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 64")));
}

// A claim's retry (same claim id and chunks, within the retention) gets
// the claim's replaced_chunks and removed_chunk_ids: the vectors to delete
// are not lost with a reply.
TEST_P(ChunkStoreConformanceTest, ClaimRetryGetsTheRemovedChunkIdsBack) {
  Claim(
      chunks(),
      Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA), Chunk("2", "t3", kFarB)}),
      T(100));
  const ChunkDocument v2 =
      WithClaim(Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2 edited", kFarA ^ 0xff00)}),
                ClaimIdHash("ingest-2"));
  ChunkAnswer first = Claim(chunks(), v2, T(200));
  EXPECT_FALSE(first.retry);
  EXPECT_EQ(first.replaced_chunks, 3u);
  EXPECT_THAT(first.removed_chunk_ids, ElementsAre("1", "2"));

  auto expect_retry = [](const ChunkAnswer& a) {
    EXPECT_TRUE(a.retry);
    EXPECT_EQ(a.replaced_chunks, 3u);
    EXPECT_THAT(a.removed_chunk_ids, ElementsAre("1", "2"));
    ASSERT_THAT(a.outcomes, SizeIs(2));
    EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
    EXPECT_EQ(a.outcomes[0].first_seen, T(100));
    EXPECT_EQ(a.outcomes[1].verdict, ChunkVerdict::kNew);
    EXPECT_EQ(a.outcomes[1].first_seen, T(200));
  };
  {
    SCOPED_TRACE("claim retry");
    expect_retry(Claim(chunks(), v2, T(300)));
  }
  {
    SCOPED_TRACE("peek retry");
    expect_retry(RunCheck(chunks(), v2, false, T(300)));
  }
  // Another claim id, or none: a normal re-send of the stored chunks.
  for (uint64_t other : {ClaimIdHash("ingest-3"), uint64_t{0}}) {
    ChunkAnswer a = Claim(chunks(), WithClaim(v2, other), T(400));
    EXPECT_FALSE(a.retry);
    EXPECT_EQ(a.replaced_chunks, 2u);
    EXPECT_THAT(a.removed_chunk_ids, IsEmpty());
  }
  {
    SCOPED_TRACE("a re-send that changes nothing keeps the claim");
    expect_retry(Claim(chunks(), v2, T(500)));
  }
  ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
  if (reopened) {
    SCOPED_TRACE("after reopen");
    expect_retry(Claim(chunks(), v2, T(600)));
  }
  // After the retention (counted from the claim), a normal re-send.
  ChunkAnswer late = Claim(chunks(), v2, T(200) + absl::Hours(24) + absl::Seconds(1));
  EXPECT_FALSE(late.retry);
  EXPECT_EQ(late.replaced_chunks, 2u);
  EXPECT_THAT(late.removed_chunk_ids, IsEmpty());
  ChunkDocument brief = v2;
  brief.claim_id_retention = absl::Seconds(5);
  EXPECT_TRUE(RunCheck(chunks(), brief, false, T(205)).retry);
  EXPECT_FALSE(RunCheck(chunks(), brief, false, T(206)).retry);
}

// Under one claim id, other chunks than the claim's are a normal re-ingest
// (which keeps its own answer for its retries); a change without a claim
// id keeps none.
TEST_P(ChunkStoreConformanceTest, OtherChunksUnderTheSameClaimIdAreANormalReingest) {
  const uint64_t id = ClaimIdHash("ingest");
  Claim(
      chunks(),
      Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA), Chunk("2", "t3", kFarB)}),
      T(100));
  const ChunkDocument two =
      WithClaim(Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("1", "t2", kFarA)}), id);
  const ChunkDocument one = WithClaim(Doc("https://a/", {Chunk("0", "t1", kFp)}), id);
  ChunkAnswer a = Claim(chunks(), two, T(200));
  EXPECT_THAT(a.removed_chunk_ids, ElementsAre("2"));
  a = Claim(chunks(), one, T(300));
  EXPECT_FALSE(a.retry);
  EXPECT_EQ(a.replaced_chunks, 2u);
  EXPECT_THAT(a.removed_chunk_ids, ElementsAre("1"));
  // The first claim's chunks are no longer stored: not its retry.
  a = Peek(chunks(), two);
  EXPECT_FALSE(a.retry);
  EXPECT_EQ(a.replaced_chunks, 1u);
  EXPECT_THAT(a.removed_chunk_ids, IsEmpty());
  // The second claim's are.
  a = Claim(chunks(), one, T(400));
  EXPECT_TRUE(a.retry);
  EXPECT_EQ(a.replaced_chunks, 2u);
  EXPECT_THAT(a.removed_chunk_ids, ElementsAre("1"));
  // The same ids in another order, or another text under an id, are other
  // chunks.
  const ChunkDocument swapped =
      WithClaim(Doc("https://b/", {Chunk("x", "u1", kFp), Chunk("y", "u2", kFarA)}), id);
  Claim(chunks(), swapped, T(500));
  EXPECT_FALSE(
      Peek(chunks(),
           WithClaim(Doc("https://b/", {Chunk("y", "u2", kFarA), Chunk("x", "u1", kFp)}), id))
          .retry);
  EXPECT_FALSE(
      Peek(chunks(),
           WithClaim(Doc("https://b/", {Chunk("x", "u1", kFp), Chunk("y", "u3", kFarA)}), id))
          .retry);
  EXPECT_TRUE(Peek(chunks(), swapped).retry);

  // A change without a claim id keeps no claim: back to the second claim's
  // chunks, its retry is a normal re-send.
  Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp), Chunk("9", "t9", kFarB)}), T(600));
  Claim(chunks(), Doc("https://a/", {Chunk("0", "t1", kFp)}), T(700));
  a = Peek(chunks(), one);
  EXPECT_FALSE(a.retry);
  EXPECT_EQ(a.replaced_chunks, 1u);
  EXPECT_THAT(a.removed_chunk_ids, IsEmpty());
}

// ---- MinHash near matching (ChunkInput::min_jaccard) ----

// The texts of near_texts.h: a 400-word text, edits of it (20 edited
// words leave ~90% of the 3-word shingles shared), an unrelated text.
std::string Original() { return NearTextOriginal(); }
std::string EditedText(int edited) { return NearTextEdited(edited); }
std::string Edited() { return NearTextEdited(20); }
std::string Unrelated() { return NearTextUnrelated(); }

// A chunk of `text` (its SHA-256 and signature) with SimHash `simhash`:
// the tests pick SimHashes far apart (kFarA: 32 bits from kFp) so that
// only Jaccard can match, or close (1 bit) for both.
ChunkInput SignedChunk(const std::string& id, const std::string& text, uint64_t simhash,
                       double min_jaccard) {
  return WithSignature(Chunk(id, text, simhash), text, min_jaccard);
}

void ExpectJaccardNear(const ChunkOutcome& o, const std::string& url, const std::string& id,
                       NearMeasure measure, int distance, double at_least) {
  ExpectDuplicate(o, ChunkVerdict::kNearDuplicate, url, id, distance);
  EXPECT_EQ(o.measure, measure);
  EXPECT_GE(o.estimated_jaccard, at_least);
}

TEST_P(ChunkStoreConformanceTest, JaccardFindsAnEditedChunkHammingMisses) {
  const double estimate = EstimateJaccard(MinHasher().Sign(Original()), MinHasher().Sign(Edited()));
  ASSERT_GE(estimate, 0.8);
  ASSERT_LT(estimate, 0.99);
  ChunkAnswer a =
      Claim(chunks(), Doc("https://a/", {SignedChunk("0", Original(), kFp, 0.8)}), T(100));
  EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "before reopen" : "after reopen");
    // min_jaccard 0.8: near by Jaccard alone (SimHash distance 32).
    ChunkAnswer q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0.8)}));
    ExpectJaccardNear(q.outcomes[0], "https://a/", "0", NearMeasure::kJaccard, 32, 0.8);
    EXPECT_DOUBLE_EQ(q.outcomes[0].estimated_jaccard, estimate);
    EXPECT_EQ(q.outcomes[0].duplicate_simhash, kFp);
    EXPECT_EQ(q.outcomes[0].first_seen, T(100));
    // Above the estimate: the candidate is verified and rejected.
    q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0.99)}));
    EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
    // Off (min_jaccard 0, the default): SimHash only, as before.
    q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0)}));
    EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
    EXPECT_EQ(q.outcomes[0].measure, NearMeasure::kSimHash);
    EXPECT_EQ(q.outcomes[0].estimated_jaccard, 0);
    // Near by both measures: kBoth, at its SimHash distance.
    q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFp ^ 1, 0.8)}));
    ExpectJaccardNear(q.outcomes[0], "https://a/", "0", NearMeasure::kBoth, 1, 0.8);
    // SimHash-near, Jaccard below the threshold: kSimHash, with the estimate.
    q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFp ^ 1, 0.99)}));
    ExpectJaccardNear(q.outcomes[0], "https://a/", "0", NearMeasure::kSimHash, 1, 0.8);
    // An unrelated text is not near.
    q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Unrelated(), kFarA, 0.8)}));
    EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
    // Exact-only chunks (max_distance -1) ignore min_jaccard.
    ChunkInput exact_only = SignedChunk("0", Edited(), kFarA, 0.8);
    exact_only.max_distance = -1;
    q = Peek(chunks(), Doc("https://b/", {exact_only}));
    EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
    if (round == 0) {
      ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
      if (!reopened) break;
    }
  }
}

TEST_P(ChunkStoreConformanceTest, AnLshCandidateBelowTheThresholdIsRejected) {
  // A heavier edit that still shares an LSH band with the original (a
  // candidate the store must verify) but whose estimate is below 0.8.
  const MinHashSignature original = MinHasher().Sign(Original());
  MinHashNearIndex lsh;
  lsh.Insert(0, original);
  int edited = 0;
  double estimate = 1;
  for (int e = 40; e <= 200; e += 4) {
    const MinHashSignature sig = MinHasher().Sign(EditedText(e));
    estimate = EstimateJaccard(original, sig);
    if (estimate < 0.75 && estimate > 0.3 && !lsh.Query(sig).empty()) {
      edited = e;
      break;
    }
  }
  ASSERT_NE(edited, 0) << "no edit gives a far LSH candidate";
  Claim(chunks(), Doc("https://a/", {SignedChunk("0", Original(), kFp, 0.8)}), T(100));
  ChunkAnswer q =
      Peek(chunks(), Doc("https://b/", {SignedChunk("0", EditedText(edited), kFarA, 0.8)}));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew) << "estimate " << estimate;
  // At a threshold it reaches, the same candidate is near: it was found,
  // and rejected only by its estimate.
  q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", EditedText(edited), kFarA, estimate)}));
  ExpectJaccardNear(q.outcomes[0], "https://a/", "0", NearMeasure::kJaccard, 32, estimate);
}

TEST_P(ChunkStoreConformanceTest, JaccardNearWithinTheDocumentInBothModes) {
  for (bool claim : {false, true}) {
    SCOPED_TRACE(claim ? "claim" : "peek");
    ChunkAnswer a = RunCheck(chunks(),
                             Doc("https://a/", {SignedChunk("0", Original(), kFp, 0.8),
                                                SignedChunk("1", Edited(), kFarA, 0.8)}),
                             claim, T(100));
    EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
    ExpectJaccardNear(a.outcomes[1], "https://a/", "0", NearMeasure::kJaccard, 32, 0.8);
  }
  // Recorded: another document's edited copy is near the stored one.
  ChunkAnswer b = Peek(chunks(), Doc("https://b/", {SignedChunk("0", EditedText(24), kFarB, 0.8)}));
  EXPECT_EQ(b.outcomes[0].verdict, ChunkVerdict::kNearDuplicate);
  EXPECT_EQ(b.outcomes[0].measure, NearMeasure::kJaccard);
}

TEST_P(ChunkStoreConformanceTest, SimHashMatchesWinOverJaccardOnesThenHighestEstimate) {
  Claim(chunks(), Doc("https://a/", {SignedChunk("0", Original(), kFp, 0.8)}), T(100));
  Claim(chunks(), Doc("https://b/", {SignedChunk("0", Unrelated(), kFarA, 0.8)}), T(200));
  // Near the original by Jaccard only, near b's unrelated text by SimHash
  // only (1 bit): the SimHash match wins, although younger.
  ChunkAnswer q = Peek(chunks(), Doc("https://q/", {SignedChunk("0", Edited(), kFarA ^ 1, 0.8)}));
  ExpectDuplicate(q.outcomes[0], ChunkVerdict::kNearDuplicate, "https://b/", "0", 1);
  EXPECT_EQ(q.outcomes[0].measure, NearMeasure::kSimHash);
  // Two Jaccard-only candidates: the higher estimate wins over the older.
  Claim(chunks(), Doc("https://c/", {SignedChunk("0", EditedText(4), kFarB, 0.8)}), T(300));
  const std::string query = EditedText(8);
  const MinHashSignature sig = MinHasher().Sign(query);
  ASSERT_GT(EstimateJaccard(sig, MinHasher().Sign(EditedText(4))),
            EstimateJaccard(sig, MinHasher().Sign(Original())));
  q = Peek(chunks(), Doc("https://q/", {SignedChunk("0", query, kFp ^ 0xff00ff, 0.8)}));
  ExpectJaccardNear(q.outcomes[0], "https://c/", "0", NearMeasure::kJaccard, 16, 0.8);
}

TEST_P(ChunkStoreConformanceTest, ChunksWithoutSignatureAreFoundBySimHashOnly) {
  Claim(chunks(), Doc("https://a/", {Chunk("0", Original(), kFp)}), T(100));
  ChunkAnswer q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0.8)}));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
  // A later signed holder of the same text does not sign the stored text.
  Claim(chunks(), Doc("https://c/", {SignedChunk("0", Original(), kFp, 0.8)}), T(200));
  q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0.8)}));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
  q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFp ^ 1, 0.8)}));
  ExpectDuplicate(q.outcomes[0], ChunkVerdict::kNearDuplicate, "https://a/", "0", 1);
  EXPECT_EQ(q.outcomes[0].measure, NearMeasure::kSimHash);
  EXPECT_EQ(q.outcomes[0].estimated_jaccard, 0);
}

TEST_P(ChunkStoreConformanceTest, ReplacingTheLastHolderRemovesTheSignature) {
  Claim(chunks(), Doc("https://a/", {SignedChunk("0", Original(), kFp, 0.8)}), T(100));
  Claim(chunks(), Doc("https://b/", {SignedChunk("0", Original(), kFp, 0.8)}), T(200));
  const ChunkDocument query = Doc("https://q/", {SignedChunk("0", Edited(), kFarA, 0.8)});
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "before reopen" : "after reopen");
    if (round == 0) {
      // The owner drops the text: b holds it, and its record (rewritten
      // with the new owner) keeps the signature.
      Claim(chunks(), Doc("https://a/", {Chunk("0", "other text", kFarB)}), T(300));
    } else {
      ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
      if (!reopened) break;
    }
    ChunkAnswer q = Peek(chunks(), query);
    ExpectJaccardNear(q.outcomes[0], "https://b/", "0", NearMeasure::kJaccard, 32, 0.8);
  }
  // The last holder drops it: no chunk holds the text, nor its signature.
  Claim(chunks(), Doc("https://b/", {}), T(400));
  EXPECT_EQ(Peek(chunks(), query).outcomes[0].verdict, ChunkVerdict::kNew);
  ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
  if (reopened) {
    EXPECT_EQ(Peek(chunks(), query).outcomes[0].verdict, ChunkVerdict::kNew);
  }
}

TEST_P(ChunkStoreConformanceTest, NamespacesNeverSeeEachOthersSignatures) {
  Claim(chunks(), Doc("https://a/", {SignedChunk("0", Original(), kFp, 0.8)}, "crawl-a"), T(100));
  ChunkAnswer q =
      Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0.8)}, "crawl-a"));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNearDuplicate);
  q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0.8)}, "crawl-b"));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
  q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Edited(), kFarA, 0.8)}));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
}

// A signed chunk of `text` that keeps its shingle set too, as the engine
// sends it (FingerprintText: no set above kMaxExactShingles shingles).
ChunkInput SetChunk(const std::string& id, const std::string& text, uint64_t simhash,
                    double min_jaccard) {
  ChunkInput c = SignedChunk(id, text, simhash, min_jaccard);
  EXPECT_THAT(FingerprintText(text, SimHasher(), MinHasher(), &c.shingles).status(), IsOk());
  return c;
}

// ExactPair: a 29-word text (27 distinct 3-word shingles) and the same with
// its middle word changed: 3 shingles of each differ, so the exact Jaccard
// is 24 / 30 = 0.8. The first seed whose pair is an LSH candidate (the
// store must be asked to verify it) and whose MinHash estimate is below
// 0.8, so that only the exact Jaccard finds it at 0.8.
struct ExactPair {
  std::string original, edited;
  double estimate = 0;
};
ExactPair MakeExactPair() {
  for (int seed = 0; seed < 1000; ++seed) {
    ExactPair p;
    for (int i = 0; i < 29; ++i) {
      absl::StrAppend(&p.original, i == 0 ? "" : " ", "s", seed, "w", i);
      absl::StrAppend(&p.edited, i == 0 ? "" : " ",
                      i == 14 ? "changed" : absl::StrCat("s", seed, "w", i));
    }
    const MinHashSignature a = MinHasher().Sign(p.original);
    const MinHashSignature b = MinHasher().Sign(p.edited);
    MinHashNearIndex lsh;
    lsh.Insert(0, a);
    p.estimate = EstimateJaccard(a, b);
    if (p.estimate < 0.8 && !lsh.Query(b).empty()) return p;
  }
  ADD_FAILURE() << "no seed gives an LSH candidate estimated below 0.8";
  return {};
}

TEST_P(ChunkStoreConformanceTest, ExactJaccardVerifiesWhenBothChunksKeptTheirSets) {
  const ExactPair pair = MakeExactPair();
  const ChunkInput original = SetChunk("0", pair.original, kFp, 0.8);
  ASSERT_EQ(original.shingles.size(), 27u);
  ASSERT_EQ(ExactJaccard(original.shingles, SetChunk("0", pair.edited, kFarA, 0.8).shingles), 0.8);
  Claim(chunks(), Doc("https://a/", {original}), T(100));
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "before reopen" : "after reopen");
    // At 0.8: near by its exact Jaccard, reported exactly, where the
    // estimate (below 0.8) would have rejected it.
    ChunkAnswer q = Peek(chunks(), Doc("https://b/", {SetChunk("0", pair.edited, kFarA, 0.8)}));
    ExpectJaccardNear(q.outcomes[0], "https://a/", "0", NearMeasure::kJaccard, 32, 0.8);
    EXPECT_EQ(q.outcomes[0].estimated_jaccard, 0.8);
    // Just above it: rejected.
    q = Peek(chunks(), Doc("https://b/", {SetChunk("0", pair.edited, kFarA, 0.81)}));
    EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
    // SimHash-near too: kBoth, with the exact Jaccard.
    q = Peek(chunks(), Doc("https://b/", {SetChunk("0", pair.edited, kFp ^ 1, 0.8)}));
    ExpectJaccardNear(q.outcomes[0], "https://a/", "0", NearMeasure::kBoth, 1, 0.8);
    EXPECT_EQ(q.outcomes[0].estimated_jaccard, 0.8);
    // The checked chunk without a set: the estimate decides, and rejects.
    q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", pair.edited, kFarA, 0.8)}));
    EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew) << "estimate " << pair.estimate;
    q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", pair.edited, kFp ^ 1, 0.8)}));
    EXPECT_EQ(q.outcomes[0].measure, NearMeasure::kSimHash);
    EXPECT_DOUBLE_EQ(q.outcomes[0].estimated_jaccard, pair.estimate);
    if (round == 0) {
      ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
      if (!reopened) break;
    }
  }
}

TEST_P(ChunkStoreConformanceTest, ExactJaccardWithinTheDocumentInBothModes) {
  const ExactPair pair = MakeExactPair();
  for (bool claim : {false, true}) {
    SCOPED_TRACE(claim ? "claim" : "peek");
    ChunkAnswer a = RunCheck(chunks(),
                             Doc("https://a/", {SetChunk("0", pair.original, kFp, 0.8),
                                                SetChunk("1", pair.edited, kFarA, 0.8)}),
                             claim, T(100));
    EXPECT_EQ(a.outcomes[0].verdict, ChunkVerdict::kNew);
    ExpectJaccardNear(a.outcomes[1], "https://a/", "0", NearMeasure::kJaccard, 32, 0.8);
    EXPECT_EQ(a.outcomes[1].estimated_jaccard, 0.8);
  }
}

TEST_P(ChunkStoreConformanceTest, ATextWithoutASetIsVerifiedByTheEstimate) {
  const ExactPair pair = MakeExactPair();
  // Stored without its set (a chunk signed without one): the estimate
  // decides, even for a checked chunk that has one.
  Claim(chunks(), Doc("https://a/", {SignedChunk("0", pair.original, kFp, 0.8)}), T(100));
  ChunkAnswer q = Peek(chunks(), Doc("https://b/", {SetChunk("0", pair.edited, kFarA, 0.8)}));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew) << "estimate " << pair.estimate;
  q = Peek(chunks(), Doc("https://b/", {SetChunk("0", pair.edited, kFarA, pair.estimate)}));
  ExpectJaccardNear(q.outcomes[0], "https://a/", "0", NearMeasure::kJaccard, 32, pair.estimate);
  EXPECT_DOUBLE_EQ(q.outcomes[0].estimated_jaccard, pair.estimate);
  // Texts of more than kMaxExactShingles shingles keep no set (398 here):
  // their candidates are verified by the estimate.
  Claim(chunks(), Doc("https://c/", {SetChunk("0", Original(), kFp, 0.8)}), T(200));
  const ChunkInput edited = SetChunk("0", Edited(), kFarA, 0.8);
  EXPECT_TRUE(edited.shingles.empty());
  q = Peek(chunks(), Doc("https://d/", {edited}));
  ExpectJaccardNear(q.outcomes[0], "https://c/", "0", NearMeasure::kJaccard, 32, 0.8);
  EXPECT_DOUBLE_EQ(q.outcomes[0].estimated_jaccard,
                   EstimateJaccard(MinHasher().Sign(Original()), MinHasher().Sign(Edited())));
}

TEST_P(ChunkStoreConformanceTest, MinJaccardOutsideZeroToOneIsInvalidAndNamesTheChunk) {
  for (double bad : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    SCOPED_TRACE(bad);
    ChunkAnswer answer;
    EXPECT_THAT(chunks().CheckChunks(Doc("https://a/", {SignedChunk("0", Original(), kFp, 0.8),
                                                        SignedChunk("1", Edited(), kFarA, bad)}),
                                     true, T(100), &answer),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("chunk 1 (\"1\")"), HasSubstr("min_jaccard"))));
  }
  // Nothing was recorded; 0 and 1 are allowed.
  ChunkAnswer q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Original(), kFp, 1)}));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
  q = Peek(chunks(), Doc("https://b/", {SignedChunk("0", Original(), kFp, 0)}));
  EXPECT_EQ(q.outcomes[0].verdict, ChunkVerdict::kNew);
}

}  // namespace
}  // namespace dedupd::testing
