// Engine::CheckChunks against the in-memory chunk store: validation, the
// short-chunk rule, duplicates within a request and across documents,
// re-sent documents, peek.
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/text/chunk_near_rule.h"
#include "core/text/content_fingerprint.h"
#include "core/text/minhash.h"
#include "core/text/shingle_set.h"
#include "core/text/simhash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine.h"
#include "storage/memory/memory_chunk_store.h"
#include "storage/memory/memory_content_store.h"
#include "storage/memory/memory_url_store.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(DEDUPD_SERVER_TESTDATA_DIR) + "/" + name, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The page's words, and runs of them as chunk texts.
std::vector<std::string> SplitWords(const std::string& text) {
  return absl::StrSplit(text, absl::ByAnyChar(" \n\t"), absl::SkipWhitespace());
}
std::string Words(const std::vector<std::string>& words, size_t from, size_t n) {
  return absl::StrJoin(words.begin() + from, words.begin() + from + n, " ");
}

class ChunkEngineTest : public ::testing::Test {
 protected:
  static constexpr size_t kMaxTextBytes = 4096;
  static constexpr size_t kMaxBatchItems = 50;

  ChunkEngineTest()
      : content_store_(&url_store_, 3),
        chunk_store_(3),
        engine_(&normalizer_, &url_store_, &hasher_, &content_store_, &chunk_store_, Options()) {}

  EngineOptions Options() {
    EngineOptions o;
    o.max_batch_items = kMaxBatchItems;
    o.max_text_bytes = kMaxTextBytes;
    o.clock = [this] { return now_; };
    return o;
  }

  static v1::CheckChunksRequest Request(const std::string& url,
                                        const std::vector<std::string>& texts,
                                        v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    v1::CheckChunksRequest r;
    r.set_document_url(url);
    r.set_mode(mode);
    for (const std::string& t : texts) r.add_chunks()->set_text(t);
    return r;
  }

  // Sends a request that must succeed and answer every chunk.
  v1::CheckChunksResponse Check(const v1::CheckChunksRequest& request) {
    v1::CheckChunksResponse response;
    EXPECT_THAT(engine_.CheckChunks(request, &response), IsOk());
    EXPECT_EQ(response.results_size(), request.chunks_size());
    return response;
  }
  v1::CheckChunksResponse Check(const std::string& url, const std::vector<std::string>& texts,
                                v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    return Check(Request(url, texts, mode));
  }

  absl::Time now_ = absl::FromUnixMicros(1764496800123456);
  UrlNormalizer normalizer_;
  SimHasher hasher_;
  MemoryUrlStore url_store_;
  MemoryContentStore content_store_;
  MemoryChunkStore chunk_store_;
  Engine engine_;
};

TEST_F(ChunkEngineTest, BadChunksAreInvalidAndTheRestAreRecorded) {
  const std::string good = "a perfectly ordinary chunk of text about installing the package";
  v1::CheckChunksRequest r = Request("https://docs.example/a", {});
  struct Case {
    std::string text;
    std::optional<std::string> id;
    std::string error;  // empty: valid
    v1::ErrorReason reason = v1::ERROR_REASON_UNSPECIFIED;
  };
  const std::vector<Case> cases = {
      {good, std::nullopt, ""},
      {"", std::nullopt, "text: ", v1::ERROR_REASON_BAD_TEXT},
      {" \t\n\u00a0 ", std::nullopt, "text: ", v1::ERROR_REASON_BAD_TEXT},
      {"bad \xff utf-8", std::nullopt, "text: ", v1::ERROR_REASON_BAD_TEXT},
      {std::string("nul \0 byte", 10), std::nullopt, "text: ", v1::ERROR_REASON_BAD_TEXT},
      {std::string(kMaxTextBytes + 1, 'x'), std::nullopt, "limit is 4096 (--max_text_bytes)",
       v1::ERROR_REASON_TEXT_TOO_LARGE},
      {"second good chunk with words enough to be matched nearly if need be", "intro", ""},
      {"a chunk whose id repeats another one", "intro", "chunk_id: \"intro\" repeats chunk 6's",
       v1::ERROR_REASON_BAD_CHUNK_ID},
      {"a chunk with an explicitly empty id", "", "chunk_id: is empty",
       v1::ERROR_REASON_BAD_CHUNK_ID},
      {"a chunk with a huge id", std::string(Engine::kMaxChunkIdBytes + 1, 'i'),
       "chunk_id: is 1025 bytes", v1::ERROR_REASON_BAD_CHUNK_ID},
  };
  for (const Case& c : cases) {
    v1::ChunkItem* item = r.add_chunks();
    item->set_text(c.text);
    if (c.id.has_value()) item->set_chunk_id(*c.id);
  }
  v1::CheckChunksResponse response = Check(r);
  EXPECT_EQ(response.document_url(), "https://docs.example/a");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("chunk ", i));
    const v1::ChunkResult& result = response.results(static_cast<int>(i));
    if (cases[i].error.empty()) {
      EXPECT_EQ(result.verdict(), v1::CHUNK_VERDICT_NEW) << result.error();
      EXPECT_EQ(result.content_hash().size(), 64u);
      EXPECT_TRUE(result.has_first_seen_time());
    } else {
      EXPECT_EQ(result.verdict(), v1::CHUNK_VERDICT_INVALID);
      EXPECT_THAT(result.error(), HasSubstr(cases[i].error));
    }
    EXPECT_EQ(result.error_reason(), cases[i].reason);
  }
  EXPECT_EQ(response.results(0).chunk_id(), "0") << "default id: the index";
  EXPECT_EQ(response.results(6).chunk_id(), "intro");
  // Only the two valid chunks were recorded: a re-send replaces two.
  v1::CheckChunksResponse again = Check("https://docs.example/a", {good}, v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(again.replaced_chunks(), 2u);
  // "0" is sent again with its text (its vector stays); "intro" is not.
  EXPECT_THAT(again.removed_chunk_ids(), ElementsAre("intro"));
}

TEST_F(ChunkEngineTest, AllChunksInvalidRecordsNothing) {
  Check("https://docs.example/a", {"one chunk of text that is long enough to count"});
  v1::CheckChunksResponse bad = Check("https://docs.example/a", {"", "\xc3"});
  EXPECT_EQ(bad.results(0).verdict(), v1::CHUNK_VERDICT_INVALID);
  EXPECT_EQ(bad.replaced_chunks(), 0u);
  EXPECT_EQ(Check("https://docs.example/a", {"x y z"}, v1::CLAIM_MODE_PEEK).replaced_chunks(), 1u);
}

TEST_F(ChunkEngineTest, WholeRequestErrorsAreInvalidArgument) {
  v1::CheckChunksResponse response;
  EXPECT_THAT(engine_.CheckChunks(Request("https://a.example/", {}), &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no chunks")));
  EXPECT_THAT(engine_.CheckChunks(
                  Request("https://a.example/", std::vector<std::string>(kMaxBatchItems + 1, "t")),
                  &response),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("51 chunks; the limit is 50 per request (--max_batch_items)")));
  EXPECT_THAT(engine_.CheckChunks(Request("", {"text"}), &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("document_url: is empty")));
  EXPECT_THAT(engine_.CheckChunks(Request("not a url", {"text"}), &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("document_url: ")));
  v1::CheckChunksRequest far = Request("https://a.example/", {"text"});
  far.set_max_hamming_distance(4);
  EXPECT_THAT(engine_.CheckChunks(far, &response),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("above this server's limit of 3 (--simhash_max_distance)")));
}

TEST_F(ChunkEngineTest, SharedParagraphsAcrossPagesAndWithinOne) {
  const std::vector<std::string> words = SplitWords(ReadTestdata("python_policy_packaging.txt"));
  ASSERT_GT(words.size(), 900u) << "missing testdata";
  const std::string preamble = Words(words, 0, 80);
  const std::string a1 = Words(words, 100, 80), a2 = Words(words, 200, 80);
  const std::string b1 = Words(words, 300, 80), b2 = Words(words, 400, 80);
  // A one-word edit of a2 whose SimHash stays within 3 bits of a2's (a
  // one-word edit moves an 80-word chunk's SimHash ~6 bits on average,
  // docs/chunk_dedup.md, so the test picks an edit position that is near;
  // what it checks is the engine's answer, not SimHash's recall).
  std::string a2_edit;
  for (size_t at = 200; at < 280 && a2_edit.empty(); ++at) {
    std::vector<std::string> edited_words = words;
    edited_words[at] = "zebra";
    std::string candidate = Words(edited_words, 200, 80);
    absl::StatusOr<ContentFingerprint> x = FingerprintText(candidate, hasher_);
    absl::StatusOr<ContentFingerprint> y = FingerprintText(a2, hasher_);
    ASSERT_TRUE(x.ok() && y.ok());
    if (HammingDistance(x->simhash, y->simhash) <= 3 && x->sha256 != y->sha256) {
      a2_edit = std::move(candidate);
    }
  }
  ASSERT_FALSE(a2_edit.empty()) << "no one-word edit of the chunk stays within 3 bits";

  v1::CheckChunksResponse a = Check("https://docs.example/a", {preamble, a1, a2, preamble});
  EXPECT_EQ(a.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(a.results(1).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(a.results(2).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(a.results(3).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(a.results(3).duplicate_of_document_url(), "https://docs.example/a");
  EXPECT_EQ(a.results(3).duplicate_of_chunk_id(), "0");
  EXPECT_EQ(a.results(0).applied_max_hamming_distance(), 3);

  now_ += absl::Minutes(1);
  v1::CheckChunksResponse b = Check("https://docs.example/b", {preamble, b1, a2_edit, b2});
  EXPECT_EQ(b.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(b.results(0).duplicate_of_document_url(), "https://docs.example/a");
  EXPECT_EQ(b.results(0).duplicate_of_chunk_id(), "0");
  EXPECT_EQ(b.results(0).other_holders(), 2u);
  EXPECT_EQ(b.results(0).distance(), 0u);
  EXPECT_EQ(b.results(1).verdict(), v1::CHUNK_VERDICT_NEW);
  const int d = HammingDistance(b.results(2).simhash(), a.results(2).simhash());
  if (d <= 3) {
    EXPECT_EQ(b.results(2).verdict(), v1::CHUNK_VERDICT_NEAR_DUPLICATE);
    EXPECT_EQ(b.results(2).duplicate_of_chunk_id(), "2");
    EXPECT_EQ(b.results(2).distance(), static_cast<uint32_t>(d));
    EXPECT_EQ(b.results(2).duplicate_of_simhash(), a.results(2).simhash());
  } else {
    ADD_FAILURE() << "a one-word edit of an 80-word chunk moved the SimHash by " << d;
  }
  EXPECT_EQ(b.results(3).verdict(), v1::CHUNK_VERDICT_NEW);

  // A chunk never matches a whole page, nor a page a chunk.
  v1::CheckContentRequest page;
  v1::ContentItem* item = page.add_items();
  item->set_url("https://docs.example/page");
  item->set_text(b2);
  v1::CheckContentResponse page_response;
  ASSERT_THAT(engine_.CheckContent(page, &page_response), IsOk());
  EXPECT_EQ(page_response.results(0).verdict(), v1::CONTENT_VERDICT_NEW);
}

TEST_F(ChunkEngineTest, ResendingADocumentReplacesItsChunks) {
  const std::vector<std::string> words = SplitWords(ReadTestdata("python_policy_packaging.txt"));
  const std::vector<std::string> chunks = {Words(words, 0, 60), Words(words, 60, 60),
                                           Words(words, 120, 60)};
  Check("https://docs.example/a", chunks);
  now_ += absl::Hours(1);
  v1::CheckChunksResponse again = Check("https://docs.example/a", chunks);
  EXPECT_EQ(again.replaced_chunks(), 3u);
  for (const v1::ChunkResult& r : again.results()) {
    EXPECT_EQ(r.verdict(), v1::CHUNK_VERDICT_NEW);
  }
  // Peek answers what a claim would, and records nothing.
  v1::CheckChunksResponse peek = Check("https://docs.example/b", chunks, v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(peek.results(1).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(peek.results(1).duplicate_of_chunk_id(), "1");
  EXPECT_EQ(Check("https://docs.example/b", chunks, v1::CLAIM_MODE_PEEK).replaced_chunks(), 0u);
}

v1::CheckChunksRequest IdRequest(const std::string& document_id,
                                 const std::vector<std::pair<std::string, std::string>>& chunks) {
  v1::CheckChunksRequest r;
  r.set_document_id(document_id);
  for (const auto& [id, text] : chunks) {
    v1::ChunkItem* c = r.add_chunks();
    c->set_chunk_id(id);
    c->set_text(text);
  }
  return r;
}

TEST_F(ChunkEngineTest, DocumentIdsAreDocumentsOfTheirOwnAndRemovedChunksAreListed) {
  const std::vector<std::string> words = SplitWords(ReadTestdata("python_policy_packaging.txt"));
  const std::string p0 = Words(words, 0, 60), p1 = Words(words, 60, 60), p2 = Words(words, 120, 60);
  const std::string p3 = Words(words, 180, 60);
  v1::CheckChunksResponse first =
      Check(IdRequest("s3://bucket/Guide.PDF", {{"a", p0}, {"b", p1}, {"c", p2}}));
  EXPECT_EQ(first.document_id(), "s3://bucket/Guide.PDF");
  EXPECT_EQ(first.document_url(), "");
  for (const v1::ChunkResult& r : first.results()) EXPECT_EQ(r.verdict(), v1::CHUNK_VERDICT_NEW);

  // A URL document with one of its paragraphs names the id as the holder.
  v1::CheckChunksResponse page = Check("https://docs.example/guide", {p1});
  EXPECT_EQ(page.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(page.results(0).duplicate_of_document_id(), "s3://bucket/Guide.PDF");
  EXPECT_EQ(page.results(0).duplicate_of_document_url(), "");
  EXPECT_EQ(page.results(0).duplicate_of_chunk_id(), "b");

  // A re-ingest of the id: "a" unchanged, "b" edited away, "c" dropped,
  // "d" new. The caller deletes exactly the vectors of "b" and "c".
  now_ += absl::Hours(1);
  v1::CheckChunksResponse again =
      Check(IdRequest("s3://bucket/Guide.PDF", {{"a", p0}, {"b", p3 + " edited"}, {"d", p2}}));
  EXPECT_EQ(again.replaced_chunks(), 3u);
  EXPECT_THAT(again.removed_chunk_ids(), ElementsAre("b", "c"));
  EXPECT_EQ(again.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  // The id is not normalized: another spelling is another document.
  v1::CheckChunksResponse other = Check(IdRequest("s3://bucket/guide.pdf", {{"a", p0}}));
  EXPECT_EQ(other.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(other.results(0).duplicate_of_document_id(), "s3://bucket/Guide.PDF");
  EXPECT_EQ(other.replaced_chunks(), 0u);
}

TEST_F(ChunkEngineTest, BadDocumentIdsFailTheRequestWithTheLimit) {
  v1::CheckChunksResponse response;
  struct Case {
    v1::CheckChunksRequest request;
    std::string want;
  } cases[] = {
      {IdRequest(std::string(1025, 'd'), {{"0", "text"}}),
       "document_id: is 1025 bytes; the limit is 1024"},
      {IdRequest(std::string("a\0b", 3), {{"0", "text"}}), "document_id: byte 1 is NUL"},
      {IdRequest("bad \xc3", {{"0", "text"}}), "document_id: is not valid UTF-8"},
      {Request("", {"text"}), "document_url: is empty (the document's URL, or a document_id"},
  };
  cases[3].request.set_document_id("");
  v1::CheckChunksRequest both = IdRequest("doc", {{"0", "text"}});
  both.set_document_url("https://a.example/");
  EXPECT_THAT(engine_.CheckChunks(both, &response),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document_id: is given with document_url")));
  for (const Case& c : cases) {
    EXPECT_THAT(engine_.CheckChunks(c.request, &response),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want)))
        << c.want;
  }
}

// A retried claim (same claim_id and chunks) gets the removed chunk ids
// of the claim whose reply it lost; an over-long claim_id fails the
// request.
TEST_F(ChunkEngineTest, ClaimIdRetryGetsTheRemovedChunkIdsAgain) {
  const std::vector<std::string> words = SplitWords(ReadTestdata("python_policy_packaging.txt"));
  Check("https://docs.example/r",
        {Words(words, 0, 60), Words(words, 60, 60), Words(words, 120, 60)});
  now_ += absl::Hours(1);
  v1::CheckChunksRequest request =
      Request("https://docs.example/r", {Words(words, 0, 60), Words(words, 180, 60)});
  request.set_claim_id("ingest-7");
  v1::CheckChunksResponse first = Check(request);
  EXPECT_EQ(first.replaced_chunks(), 3u);
  EXPECT_THAT(first.removed_chunk_ids(), ElementsAre("1", "2"));
  now_ += absl::Minutes(1);
  for (v1::ClaimMode mode : {v1::CLAIM_MODE_CLAIM, v1::CLAIM_MODE_PEEK}) {
    request.set_mode(mode);
    v1::CheckChunksResponse again = Check(request);
    EXPECT_EQ(again.replaced_chunks(), 3u) << mode;
    EXPECT_THAT(again.removed_chunk_ids(), ElementsAre("1", "2")) << mode;
    EXPECT_EQ(again.results(1).verdict(), v1::CHUNK_VERDICT_NEW);
  }
  request.set_mode(v1::CLAIM_MODE_CLAIM);
  request.set_claim_id("ingest-8");
  v1::CheckChunksResponse other = Check(request);
  EXPECT_EQ(other.replaced_chunks(), 2u);
  EXPECT_THAT(other.removed_chunk_ids(), IsEmpty());

  request.set_claim_id(std::string(65, 'x'));
  v1::CheckChunksResponse response;
  EXPECT_THAT(engine_.CheckChunks(request, &response),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("claim_id: is 65 bytes; the limit is 64")));
}

TEST_F(ChunkEngineTest, ShortChunksUseTheStricterRule) {
  // A heading-sized chunk: near matching by the rule for its word count.
  const std::string heading = "Installation";
  v1::CheckChunksResponse r = Check("https://docs.example/a", {heading});
  EXPECT_EQ(r.results(0).applied_max_hamming_distance(), ChunkNearDistance(1, 3));
  // Exact repeats of short chunks are still found.
  v1::CheckChunksResponse b = Check("https://docs.example/b", {heading});
  EXPECT_EQ(b.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  // An explicit distance is capped by the rule too.
  v1::CheckChunksRequest req = Request("https://docs.example/c", {"Installing it"});
  req.set_max_hamming_distance(1);
  v1::CheckChunksResponse c = Check(req);
  EXPECT_EQ(c.results(0).applied_max_hamming_distance(), ChunkNearDistance(2, 1));
}

// Two words of an 80-word chunk replaced (Jaccard ~0.86): SimHash moves
// beyond the distance, MinHash (on by default at 0.8) finds it, and says so.
TEST_F(ChunkEngineTest, ChunkEditsBeyondTheDistanceAreFoundByJaccard) {
  const std::vector<std::string> words = SplitWords(ReadTestdata("python_policy_packaging.txt"));
  ASSERT_GT(words.size(), 300u) << "missing testdata";
  std::vector<std::string> edited_words(words.begin() + 100, words.begin() + 180);
  const std::string chunk = absl::StrJoin(edited_words, " ");
  edited_words[20] = "zqone";
  edited_words[60] = "zqtwo";
  const std::string edited = absl::StrJoin(edited_words, " ");
  ASSERT_EQ(Check("https://docs.example/a", {chunk}).results(0).verdict(), v1::CHUNK_VERDICT_NEW);

  v1::CheckChunksResponse r = Check("https://docs.example/b", {edited}, v1::CLAIM_MODE_PEEK);
  const v1::ChunkResult& near = r.results(0);
  std::cout << "two words of 80: SimHash distance " << near.distance() << ", exact Jaccard "
            << near.estimated_jaccard() << "\n";
  ASSERT_EQ(near.verdict(), v1::CHUNK_VERDICT_NEAR_DUPLICATE);
  EXPECT_EQ(near.applied_min_jaccard(), 0.8);
  EXPECT_EQ(near.duplicate_of_document_url(), "https://docs.example/a");
  // Both chunks kept their shingle sets (78 shingles each): the reported
  // Jaccard is the exact one of the two sets, not the MinHash estimate.
  ShingleSet32 chunk_set, edited_set;
  ASSERT_THAT(FingerprintText(chunk, hasher_, MinHasher(), &chunk_set).status(), IsOk());
  ASSERT_THAT(FingerprintText(edited, hasher_, MinHasher(), &edited_set).status(), IsOk());
  ASSERT_FALSE(chunk_set.empty());
  EXPECT_EQ(near.estimated_jaccard(), ExactJaccard(chunk_set, edited_set));
  EXPECT_GE(near.estimated_jaccard(), 0.8);
  EXPECT_LT(near.estimated_jaccard(), 1);
  EXPECT_EQ(near.near_measure(),
            near.distance() > 3 ? v1::NEAR_MEASURE_JACCARD : v1::NEAR_MEASURE_BOTH);

  // A threshold the Jaccard does not reach leaves SimHash alone.
  v1::CheckChunksRequest strict = Request("https://docs.example/b", {edited}, v1::CLAIM_MODE_PEEK);
  strict.set_min_jaccard(1);
  v1::CheckChunksResponse s = Check(strict);
  EXPECT_EQ(s.results(0).applied_min_jaccard(), 1);
  if (near.distance() > 3) {
    EXPECT_EQ(s.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  }
}

TEST_F(ChunkEngineTest, BadMinJaccardFailsTheRequestNamingTheFloor) {
  for (double j : {0.0, 0.5, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    v1::CheckChunksRequest r = Request("https://docs.example/a", {"a chunk of text"});
    r.set_min_jaccard(j);
    v1::CheckChunksResponse response;
    absl::Status st = engine_.CheckChunks(r, &response);
    EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument)) << j;
    EXPECT_THAT(st.message(), HasSubstr("--min_jaccard_floor")) << j;
  }
}

TEST_F(ChunkEngineTest, ShortChunksAreNotMatchedByMinHash) {
  v1::CheckChunksResponse r =
      Check("https://docs.example/a",
            {"seven words are too few here", "eight words are enough for a signature here"});
  EXPECT_EQ(r.results(0).applied_min_jaccard(), 0);
  EXPECT_EQ(r.results(1).applied_min_jaccard(), 0.8);
}

}  // namespace
}  // namespace dedupd
