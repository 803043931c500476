// End-to-end tests of the chunk and query-time layers (CheckChunks,
// DedupResults): the real dedupd binary on 127.0.0.1 port 0 with a temp data
// dir, driven through the client library (client/client.h). Every call has a
// deadline (the client's); waits are on conditions.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/corpus/chunker.h"
#include "client/client.h"
#include "core/text/shingle_hashes.h"
#include "core/text/text_normalizer.h"
#include "dedupd/v1/dedupd.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/client_server_test.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClientServerTest;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::RunCommand;
using ::dedupd::testing::ServerTest;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> Chunks(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view c : bench::ChunkText(text, bench::kDefaultChunkBytes)) {
    out.emplace_back(c);
  }
  return out;
}

v1::CheckChunksRequest Request(const std::string& url, const std::vector<std::string>& texts,
                               v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
  v1::CheckChunksRequest r;
  r.set_document_url(url);
  r.set_mode(mode);
  for (const std::string& t : texts) r.add_chunks()->set_text(t);
  return r;
}

// The exact Jaccard similarity of two texts' 3-word shingle sets (64-bit
// shingle hashes, computed here, not by the server), or -1 when a text
// does not normalize.
double ExactShingleJaccard(const std::string& a, const std::string& b) {
  absl::StatusOr<std::string> na = NormalizeText(a), nb = NormalizeText(b);
  if (!na.ok() || !nb.ok()) return -1;
  absl::Span<const uint64_t> da = DistinctShingleHashes(*na, 3).distinct;
  const absl::flat_hash_set<uint64_t> sa(da.begin(), da.end());
  absl::Span<const uint64_t> db = DistinctShingleHashes(*nb, 3).distinct;
  const absl::flat_hash_set<uint64_t> sb(db.begin(), db.end());
  size_t shared = 0;
  for (uint64_t h : sb) shared += sa.count(h);
  return static_cast<double>(shared) / static_cast<double>(sa.size() + sb.size() - shared);
}

class E2eChunksTest : public ClientServerTest {
 protected:
  E2eChunksTest() : ClientServerTest(DEDUPD_BINARY, "e2e_chunks_") {}

  // Sends one document; the call must succeed.
  v1::CheckChunksResponse Check(const v1::CheckChunksRequest& request) {
    absl::StatusOr<v1::CheckChunksResponse> r = client_->CheckChunks(request);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? *r : v1::CheckChunksResponse{};
  }
};

TEST_F(E2eChunksTest, SharedPreambleOfRealPagesIsFoundAndNothingElseIsMerged) {
  const std::string dir = DEDUPD_PREAMBLE_TESTDATA_DIR;
  const std::string preamble = ReadFile(dir + "/preamble.txt");
  ASSERT_GT(preamble.size(), 2000u) << "missing testdata " << dir;
  std::vector<std::string> pages;
  for (int i = 0; i < 100; ++i) {
    const std::string path = absl::StrCat(dir, "/page_", i < 10 ? "0" : "", i, ".txt");
    if (!std::filesystem::exists(path)) break;
    pages.push_back(ReadFile(path));
  }
  ASSERT_GE(pages.size(), 20u);
  // The pipeline chunks the preamble section and the page body separately
  // (section-aware chunking), so the preamble's chunks are identical on
  // every page.
  const std::vector<std::string> preamble_chunks = Chunks(preamble);
  ASSERT_GE(preamble_chunks.size(), 3u);

  size_t preamble_duplicates = 0, preamble_misses = 0;
  size_t content_chunks = 0, near_content = 0, false_merges = 0;
  std::map<std::string, std::string> chunk_text;  // "url#chunk id" -> text
  std::vector<std::string> first_ids;
  for (size_t p = 0; p < pages.size(); ++p) {
    std::vector<std::string> chunks = preamble_chunks;
    for (std::string& c : Chunks(pages[p])) chunks.push_back(std::move(c));
    const std::string url = absl::StrCat("https://docs.example/page/", p);
    for (size_t i = 0; i < chunks.size(); ++i) chunk_text[absl::StrCat(url, "#", i)] = chunks[i];
    v1::CheckChunksResponse r = Check(Request(url, chunks));
    ASSERT_EQ(r.results_size(), static_cast<int>(chunks.size()));
    for (size_t i = 0; i < chunks.size(); ++i) {
      const v1::ChunkResult& c = r.results(static_cast<int>(i));
      ASSERT_NE(c.verdict(), v1::CHUNK_VERDICT_INVALID) << c.error();
      if (i < preamble_chunks.size()) {
        if (p == 0) {
          EXPECT_EQ(c.verdict(), v1::CHUNK_VERDICT_NEW);
        } else if (c.verdict() == v1::CHUNK_VERDICT_EXACT_DUPLICATE &&
                   c.duplicate_of_document_url() == "https://docs.example/page/0" &&
                   c.duplicate_of_chunk_id() == absl::StrCat(i)) {
          ++preamble_duplicates;
        } else {
          ++preamble_misses;
        }
        continue;
      }
      ++content_chunks;
      if (c.verdict() == v1::CHUNK_VERDICT_NEW) continue;
      // A content chunk may be a near duplicate of another chunk only when
      // their shingle sets really are 0.8 alike (two API entries that
      // differ in one word are); anything else is a false merge.
      const std::string& other =
          chunk_text[absl::StrCat(c.duplicate_of_document_url(), "#", c.duplicate_of_chunk_id())];
      const double j = ExactShingleJaccard(chunks[i], other);
      if (c.verdict() == v1::CHUNK_VERDICT_NEAR_DUPLICATE && j >= 0.8) {
        ++near_content;
        EXPECT_DOUBLE_EQ(c.estimated_jaccard(), j) << url << " chunk " << i;
        continue;
      }
      ++false_merges;
      ADD_FAILURE() << url << " chunk " << i << " (" << chunks[i].substr(0, 80)
                    << "...) reported as a duplicate of " << c.duplicate_of_document_url()
                    << " chunk " << c.duplicate_of_chunk_id() << " at distance " << c.distance()
                    << ", exact Jaccard " << j;
    }
  }
  std::cout << pages.size() << " pages: " << preamble_chunks.size() << " preamble chunks each, "
            << preamble_duplicates << " preamble duplicates found, " << preamble_misses
            << " missed; " << content_chunks << " content chunks, " << near_content
            << " near duplicates of another (Jaccard >= 0.8), " << false_merges
            << " false merges\n";
  EXPECT_EQ(preamble_duplicates, (pages.size() - 1) * preamble_chunks.size());
  EXPECT_EQ(preamble_misses, 0u);
  EXPECT_EQ(false_merges, 0u);
  // The pages are different API pages: near content chunks are rare.
  EXPECT_LE(near_content, content_chunks / 20);
}

TEST_F(E2eChunksTest, WithinRequestDuplicatesResendsAndPeek) {
  const std::vector<std::string> texts = {
      "Install the package with pip install example and check the version.",
      "Configure the service by editing the file in the etc directory first.",
      "Install the package with pip install example and check the version.",
  };
  v1::CheckChunksResponse a = Check(Request("https://docs.example/a", texts));
  EXPECT_EQ(a.document_url(), "https://docs.example/a");
  EXPECT_EQ(a.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(a.results(1).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(a.results(2).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(a.results(2).duplicate_of_document_url(), "https://docs.example/a");
  EXPECT_EQ(a.results(2).duplicate_of_chunk_id(), "0");
  // Re-sent: replaced, not a duplicate of itself.
  v1::CheckChunksResponse again = Check(Request("https://docs.example/a", texts));
  EXPECT_EQ(again.replaced_chunks(), 3u);
  EXPECT_EQ(again.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(again.results(1).verdict(), v1::CHUNK_VERDICT_NEW);
  // Another document, peeked: duplicates of the first, nothing recorded.
  v1::CheckChunksRequest peek = Request("https://docs.example/b", {texts[1]}, v1::CLAIM_MODE_PEEK);
  peek.mutable_chunks(0)->set_chunk_id("setup");
  v1::CheckChunksResponse b = Check(peek);
  EXPECT_EQ(b.results(0).chunk_id(), "setup");
  EXPECT_EQ(b.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(b.results(0).duplicate_of_chunk_id(), "1");
  EXPECT_EQ(Check(peek).replaced_chunks(), 0u);
}

TEST_F(E2eChunksTest, BadInputGetsClearErrorsAndTheServerKeepsServing) {
  EXPECT_THAT(client_->CheckChunks(Request("https://docs.example/a", {})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no chunks")));
  EXPECT_THAT(client_->CheckChunks(Request("ftp://docs.example/a", {"text"})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("document_url: ")));
  v1::CheckChunksRequest far = Request("https://docs.example/a", {"text"});
  far.set_max_hamming_distance(9);
  EXPECT_THAT(client_->CheckChunks(far),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--simhash_max_distance")));
  v1::CheckChunksResponse mixed = Check(Request(
      "https://docs.example/a", {"fine text here", "", std::string("nul\0", 4), "\xfe", "fine"}));
  EXPECT_EQ(mixed.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(mixed.results(i).verdict(), v1::CHUNK_VERDICT_INVALID);
    EXPECT_THAT(mixed.results(i).error(), HasSubstr("text: "));
  }
  EXPECT_EQ(mixed.results(4).verdict(), v1::CHUNK_VERDICT_NEW);
  // A chunk over the server's message limit fails only its own call.
  v1::CheckChunksRequest huge = Request("https://docs.example/huge", {std::string(64 << 20, 'a')});
  EXPECT_THAT(client_->CheckChunks(huge), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(Check(Request("https://docs.example/a", {"fine text here"}, v1::CLAIM_MODE_PEEK))
                .results(0)
                .verdict(),
            v1::CHUNK_VERDICT_NEW);
}

TEST_F(E2eChunksTest, ConcurrentDocumentsSharingAChunkGetOneOwner) {
  constexpr int kThreads = 8, kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    const std::string shared =
        absl::StrCat("Round ", round, ": the shared boilerplate paragraph every page carries.");
    std::vector<v1::CheckChunksResponse> out(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ++ready;
        while (ready.load() < kThreads) std::this_thread::yield();
        out[t] = Check(
            Request(absl::StrCat("https://c.example/", round, "/", t),
                    {absl::StrCat("Page ", t, " of round ", round, " has its own text."), shared}));
      });
    }
    for (std::thread& th : threads) th.join();
    int owners = 0;
    std::string owner;
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_EQ(out[t].results_size(), 2);
      if (out[t].results(1).verdict() == v1::CHUNK_VERDICT_NEW) {
        ++owners;
        owner = out[t].document_url();
      }
    }
    ASSERT_EQ(owners, 1) << "round " << round;
    for (int t = 0; t < kThreads; ++t) {
      const v1::ChunkResult& r = out[t].results(1);
      if (r.verdict() == v1::CHUNK_VERDICT_NEW) continue;
      EXPECT_EQ(r.verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
      EXPECT_EQ(r.duplicate_of_document_url(), owner);
    }
  }
}

TEST_F(E2eChunksTest, RestartAndKillMinus9KeepAcknowledgedChunks) {
  ASSERT_EQ(Check(Request("https://r.example/a", {"A chunk that must survive a clean restart."}))
                .results(0)
                .verdict(),
            v1::CHUNK_VERDICT_NEW);
  absl::StatusOr<int> code = server_->Terminate();
  ASSERT_THAT(code, IsOk());
  EXPECT_EQ(*code, 0) << server_->Logs();
  StartServer();
  v1::CheckChunksResponse after = Check(Request(
      "https://r.example/b", {"a chunk that must survive a clean restart."}, v1::CLAIM_MODE_PEEK));
  EXPECT_EQ(after.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(after.results(0).duplicate_of_document_url(), "https://r.example/a");

  // Writers claim documents until the server is SIGKILLed; every chunk
  // acknowledged before the kill is found after the restart.
  constexpr int kThreads = 4, kMaxDocs = 2000;
  std::vector<std::vector<std::pair<std::string, std::string>>> acked(kThreads);
  std::atomic<int> docs_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ClientOptions options;
      options.max_attempts = 1;
      options.deadline = absl::Seconds(10);
      auto client = DedupClient::Connect(server_->address(), options);
      if (!client.ok()) return;
      for (int d = 0; d < kMaxDocs; ++d) {
        const std::string url = absl::StrCat("https://k.example/", t, "/", d);
        const std::string text =
            absl::StrCat("Chunk of document ", t, "-", d, " written during the crash test.");
        absl::StatusOr<v1::CheckChunksResponse> r = (*client)->CheckChunks(Request(url, {text}));
        if (!r.ok()) return;  // server gone
        acked[t].emplace_back(url, text);
        ++docs_done;
      }
    });
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (docs_done.load() < 200 && absl::Now() < give_up) std::this_thread::yield();
  server_->Kill();
  for (std::thread& th : threads) th.join();
  StartServer();
  size_t total = 0, lost = 0;
  for (const auto& list : acked) {
    for (const auto& [url, text] : list) {
      ++total;
      v1::CheckChunksResponse r =
          Check(Request("https://after.example/", {text}, v1::CLAIM_MODE_PEEK));
      if (r.results_size() != 1 || r.results(0).verdict() != v1::CHUNK_VERDICT_EXACT_DUPLICATE ||
          r.results(0).duplicate_of_document_url() != url) {
        ++lost;
      }
    }
  }
  ASSERT_GE(total, 200u);
  EXPECT_EQ(lost, 0u) << "of " << total << " acknowledged chunks";
}

TEST_F(E2eChunksTest, DocumentIdsNamespacesAndRemovedChunksSurviveARestart) {
  const std::string page = ReadFile(std::string(DEDUPD_PREAMBLE_TESTDATA_DIR) + "/page_00.txt");
  const std::vector<std::string> chunks = Chunks(page);
  ASSERT_GE(chunks.size(), 4u) << "missing testdata";
  auto id_request = [](const std::string& id, const std::string& name_space,
                       const std::vector<std::pair<std::string, std::string>>& items) {
    v1::CheckChunksRequest r;
    r.set_document_id(id);
    r.set_namespace_(name_space);
    for (const auto& [chunk_id, text] : items) {
      v1::ChunkItem* c = r.add_chunks();
      c->set_chunk_id(chunk_id);
      c->set_text(text);
    }
    return r;
  };
  v1::CheckChunksResponse first = Check(id_request(
      "s3://rag/Guide.txt", "tenant-a", {{"c0", chunks[0]}, {"c1", chunks[1]}, {"c2", chunks[2]}}));
  EXPECT_EQ(first.document_id(), "s3://rag/Guide.txt");
  for (const v1::ChunkResult& r : first.results()) EXPECT_EQ(r.verdict(), v1::CHUNK_VERDICT_NEW);
  // Another tenant sees none of it; its own copy is NEW there.
  v1::CheckChunksResponse other =
      Check(id_request("s3://rag/Guide.txt", "tenant-b", {{"c0", chunks[0]}}));
  EXPECT_EQ(other.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(other.replaced_chunks(), 0u);

  absl::StatusOr<int> code = server_->Terminate();
  ASSERT_THAT(code, IsOk());
  EXPECT_EQ(*code, 0) << server_->Logs();
  StartServer();

  // After the restart: a URL document in tenant-a names the id; a
  // re-ingest of the id lists exactly the chunks it removed.
  v1::CheckChunksRequest by_url = Request("https://site.example/guide", {chunks[1]});
  by_url.set_namespace_("tenant-a");
  v1::CheckChunksResponse page_answer = Check(by_url);
  EXPECT_EQ(page_answer.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(page_answer.results(0).duplicate_of_document_id(), "s3://rag/Guide.txt");
  EXPECT_EQ(page_answer.results(0).duplicate_of_chunk_id(), "c1");
  v1::CheckChunksResponse again =
      Check(id_request("s3://rag/Guide.txt", "tenant-a", {{"c0", chunks[0]}, {"c3", chunks[3]}}));
  EXPECT_EQ(again.replaced_chunks(), 3u);
  EXPECT_THAT(again.removed_chunk_ids(), ::testing::ElementsAre("c1", "c2"));
  // A bad id fails the request with the limit.
  EXPECT_THAT(client_->CheckChunks(id_request(std::string(1025, 'x'), "", {{"0", "text"}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 1024")));
}

v1::ResultHit Hit(const std::string& id, const std::string& text, double score,
                  const std::string& source) {
  v1::ResultHit h;
  h.set_id(id);
  h.set_text(text);
  h.set_score(score);
  h.set_source_url(source);
  return h;
}

TEST_F(E2eChunksTest, DedupResultsKeepsOneOfEachClusterAndCapsSources) {
  const std::string para =
      "To install the package run pip install example in a virtual environment, then "
      "import it and check the version it reports matches the release notes.";
  v1::DedupResultsRequest request;
  request.set_top_k(3);
  *request.add_hits() = Hit("a", para, 0.9, "https://one.example/");
  *request.add_hits() = Hit("b", "  " + para + " ", 0.95, "https://two.example/");
  *request.add_hits() =
      Hit("c", "Gardening in spring: tomatoes need sun.", 0.5, "https://three.example/");
  *request.add_hits() =
      Hit("d", "Another page about soil and compost.", 0.4, "https://three.example/");
  *request.add_hits() =
      Hit("e", "Watering schedules for dry summers.", 0.3, "https://three.example/");
  absl::StatusOr<v1::DedupResultsResponse> r = client_->DedupResults(request);
  ASSERT_THAT(r, IsOk());
  // top_k 3: the per-source cap is 2.
  EXPECT_EQ(r->per_source_cap(), 2u);
  ASSERT_EQ(r->kept_size(), 3);
  EXPECT_EQ(r->kept(0).id(), "b") << "the best score of the cluster";
  EXPECT_EQ(r->kept(1).id(), "c");
  EXPECT_EQ(r->kept(2).id(), "d");
  ASSERT_GE(r->dropped_size(), 1);
  EXPECT_EQ(r->dropped(0).id(), "a");
  EXPECT_EQ(r->dropped(0).reason(), v1::DROP_REASON_DUPLICATE);
  EXPECT_EQ(r->dropped(0).duplicate_of(), "b");
  EXPECT_EQ(r->dropped(0).measure(), v1::DUPLICATE_MEASURE_EXACT_TEXT);

  // With embeddings: cosine finds paraphrases the text measures do not.
  v1::DedupResultsRequest emb;
  emb.set_top_k(10);
  emb.set_per_source_cap(0);
  *emb.add_hits() = Hit("x", "How do I install it?", 0.9, "https://a.example/");
  *emb.add_hits() = Hit("y", "Installation steps, briefly.", 0.8, "https://b.example/");
  *emb.add_hits() = Hit("z", "Unrelated text about the weather.", 0.7, "https://c.example/");
  const std::vector<std::vector<float>> vectors = {{1, 0, 0, 0}, {0.99f, 0.1f, 0, 0}, {0, 0, 1, 0}};
  for (int i = 0; i < 3; ++i) {
    for (float v : vectors[i]) emb.mutable_hits(i)->add_embedding(v);
  }
  r = client_->DedupResults(emb);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->kept_size(), 2);
  EXPECT_EQ(r->kept(0).id(), "x");
  EXPECT_EQ(r->kept(1).id(), "z");
  ASSERT_EQ(r->dropped_size(), 1);
  EXPECT_EQ(r->dropped(0).measure(), v1::DUPLICATE_MEASURE_COSINE);
  EXPECT_GT(r->dropped(0).value(), 0.95);

  // Bad hits are rejected one by one, with their reason; the rest are
  // answered as if they were absent. Without top_k every survivor is kept.
  v1::DedupResultsRequest bad = emb;
  bad.clear_top_k();
  bad.mutable_hits(1)->mutable_embedding()->RemoveLast();
  bad.mutable_hits(2)->set_embedding(0, std::numeric_limits<float>::quiet_NaN());
  *bad.add_hits() = Hit("w", " ", 0.95, "https://d.example/");
  *bad.add_hits() = Hit("x2", "How do I install it?", 0.6, "https://e.example/");
  for (float v : vectors[0]) bad.mutable_hits(4)->add_embedding(v);
  r = client_->DedupResults(bad);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->rejected_size(), 3);
  EXPECT_EQ(r->rejected(0).index(), 1u);
  EXPECT_EQ(r->rejected(0).id(), "y");
  EXPECT_EQ(r->rejected(0).error_reason(), v1::ERROR_REASON_BAD_HIT);
  EXPECT_EQ(r->rejected(0).error(), "embedding has 3 dimensions, hit 0 has 4");
  EXPECT_EQ(r->rejected(1).index(), 2u);
  EXPECT_EQ(r->rejected(1).error_reason(), v1::ERROR_REASON_BAD_HIT);
  EXPECT_EQ(r->rejected(1).error(), "embedding element 0 is NaN");
  EXPECT_EQ(r->rejected(2).index(), 3u);
  EXPECT_EQ(r->rejected(2).id(), "w");
  EXPECT_EQ(r->rejected(2).error_reason(), v1::ERROR_REASON_BAD_TEXT);
  ASSERT_EQ(r->kept_size(), 1);
  EXPECT_EQ(r->kept(0).id(), "x");
  ASSERT_EQ(r->dropped_size(), 1);
  EXPECT_EQ(r->dropped(0).index(), 4u);
  EXPECT_EQ(r->dropped(0).duplicate_of(), "x");
  EXPECT_EQ(r->not_examined_size(), 0);

  // A bad request as a whole: a clear per-request error naming the limit.
  bad = emb;
  bad.clear_hits();
  EXPECT_THAT(client_->DedupResults(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no hits")));
  bad = emb;
  bad.set_top_k(0);
  EXPECT_THAT(client_->DedupResults(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("top_k: must be at least 1; omit it to keep all hits")));
  bad = emb;
  bad.set_min_jaccard(0);
  EXPECT_THAT(client_->DedupResults(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_jaccard 0 is outside")));
}

#ifdef DEDUPCTL_BINARY
TEST_F(E2eChunksTest, DedupctlChunksCheckAndResultsDedupInAPipeline) {
  const std::string input =
      "{\"document_url\":\"https://p.example/a\",\"chunks\":[\"Shared intro paragraph of "
      "the docs.\",\"Page A's own text.\"]}\n"
      "{\"document_url\":\"https://p.example/b\",\"chunks\":[{\"text\":\"shared intro "
      "paragraph of the docs.\",\"chunk_id\":\"intro\"},{\"text\":\" \"}]}\n"
      "{\"document_url\":\"https://p.example/c\",\"chunks\":\"not a list\"}\n";
  auto r = RunCommand(
      {DEDUPCTL_BINARY, "chunks", "check", "--server", server_->address(), "--deadline", "30"},
      input);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->exit_code, 1) << r->err;  // a bad line and an INVALID chunk
  std::vector<std::string> lines = absl::StrSplit(r->out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r->out;
  EXPECT_THAT(lines[0], HasSubstr("\"document_url\":\"https://p.example/a\""));
  EXPECT_THAT(lines[0], HasSubstr("\"verdict\":\"NEW\""));
  EXPECT_THAT(lines[1], HasSubstr("\"chunk_id\":\"intro\",\"verdict\":\"EXACT_DUPLICATE\""));
  EXPECT_THAT(lines[1], HasSubstr("\"duplicate_of\":{\"document_url\":\"https://p.example/a\","
                                  "\"chunk_id\":\"0\""));
  EXPECT_THAT(lines[1], HasSubstr("\"verdict\":\"INVALID\""));
  EXPECT_THAT(lines[2], HasSubstr("\"line\":3"));
  // What dedupctl claimed is in the server.
  v1::CheckChunksResponse peek = Check(
      Request("https://p.example/z", {"Shared intro paragraph of the docs."}, v1::CLAIM_MODE_PEEK));
  EXPECT_EQ(peek.results(0).verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(peek.results(0).duplicate_of_document_url(), "https://p.example/a");

  const std::string hits =
      "[{\"id\":\"h1\",\"text\":\"Install with pip.\",\"score\":0.9,"
      "\"source_url\":\"https://s.example/1\"},"
      "{\"id\":\"h2\",\"text\":\"install WITH pip.\",\"score\":0.8,"
      "\"source_url\":\"https://s.example/2\"},"
      "{\"id\":\"h3\",\"text\":\"Something else.\",\"score\":0.7}]";
  auto d = RunCommand(
      {DEDUPCTL_BINARY, "results", "dedup", "--server", server_->address(), "--top_k", "5"}, hits);
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ(d->exit_code, 0) << d->err;
  EXPECT_THAT(d->out, HasSubstr("\"kept\":[{\"index\":0,\"id\":\"h1\""));
  EXPECT_THAT(d->out, HasSubstr("\"id\":\"h2\",\"reason\":\"DUPLICATE\""));
  EXPECT_THAT(d->out, HasSubstr("\"measure\":\"EXACT_TEXT\""));
  // Without --top_k every survivor is kept; a bad hit is printed as
  // rejected beside the decision, and makes the exit code 1.
  auto bad = RunCommand({DEDUPCTL_BINARY, "results", "dedup", "--server", server_->address()},
                        "[{\"id\":\"x\",\"text\":\"\",\"score\":1},"
                        "{\"id\":\"y\",\"text\":\"Fine text.\",\"score\":0.5}]");
  ASSERT_THAT(bad, IsOk());
  EXPECT_EQ(bad->exit_code, 1) << bad->err;
  EXPECT_EQ(bad->out,
            "{\"kept\":[{\"index\":1,\"id\":\"y\",\"score\":0.5}],\"dropped\":[],"
            "\"not_examined\":[],\"rejected\":[{\"index\":0,\"id\":\"x\",\"reason\":"
            "\"BAD_TEXT\",\"error\":\"text: text is empty or only whitespace\"}],"
            "\"per_source_cap\":3}\n");
}
#endif  // DEDUPCTL_BINARY

}  // namespace
}  // namespace dedupd
