// End-to-end tests of the content layer (CheckContent): the real dedupd
// binary on 127.0.0.1 port 0 with a temp data dir, driven through the
// generated gRPC stub. Every call has a deadline; waits are on conditions.
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/text_edits.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::ReadTextFile;
using ::dedupd::testing::RunCommand;
using ::dedupd::testing::ServerTest;
using ::dedupd::testing::SubstituteWords;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr auto kRpcDeadline = std::chrono::seconds(30);

// ~980 words of real prose (server/testdata, from the Debian Python Policy).
std::string PolicyText() {
  return ReadTextFile(std::string(DEDUPD_SERVER_TESTDATA_DIR) + "/python_policy_packaging.txt");
}

// The policy text with one word replaced.
std::string PolicyTextOneWordEdited() {
  std::string text = PolicyText();
  const std::string from = "As far as is reasonable";
  const size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), "As far as is appropriate");
  return text;
}

// The number after "\"<name>\":" in a dedupctl output line; -1 when absent.
double NumberMember(const std::string& line, const std::string& name) {
  const std::string key = absl::StrCat("\"", name, "\":");
  const size_t at = line.find(key);
  double value = -1;
  if (at == std::string::npos) return value;
  const size_t start = at + key.size();
  const size_t end = line.find_first_of(",}", start);
  if (!absl::SimpleAtod(line.substr(start, end - start), &value)) return -1;
  return value;
}

v1::ContentItem Item(const std::string& url, const std::string& text,
                     const std::string& canonical = "") {
  v1::ContentItem item;
  item.set_url(url);
  item.set_text(text);
  item.set_canonical_url(canonical);
  return item;
}

// A reusable barrier for a fixed number of threads (absl::Barrier is
// single-use): every round, all threads leave together.
class RoundBarrier {
 public:
  explicit RoundBarrier(int n) : n_(n) {}
  void Wait() {
    absl::MutexLock lock(&mu_);
    const int round = round_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++round_;
      cv_.SignalAll();
      return;
    }
    while (round_ == round) cv_.Wait(&mu_);
  }

 private:
  const int n_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  int round_ ABSL_GUARDED_BY(mu_) = 0;
};

class E2eContentTest : public ServerTest {
 protected:
  E2eContentTest() : ServerTest(DEDUPD_BINARY, "e2e_content_") {}

  void OnStarted() override {
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Dedup::NewStub(channel_);
  }

  // Call sends one CheckContent request with a deadline.
  grpc::Status Call(const v1::CheckContentRequest& request, v1::CheckContentResponse* response,
                    v1::Dedup::Stub* stub = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    return (stub != nullptr ? stub : stub_.get())->CheckContent(&ctx, request, response);
  }

  // Check sends `items`; the call must succeed and answer every item.
  std::vector<v1::ContentResult> Check(const std::vector<v1::ContentItem>& items,
                                       v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    v1::CheckContentRequest request;
    request.set_mode(mode);
    for (const v1::ContentItem& item : items) *request.add_items() = item;
    v1::CheckContentResponse response;
    grpc::Status s = Call(request, &response);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    EXPECT_EQ(static_cast<size_t>(response.results_size()), items.size());
    return {response.results().begin(), response.results().end()};
  }

  v1::ContentResult CheckOne(const std::string& url, const std::string& text,
                             v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    std::vector<v1::ContentResult> r = Check({Item(url, text)}, mode);
    return r.empty() ? v1::ContentResult{} : r[0];
  }

  v1::UrlVerdict PeekUrl(const std::string& url) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    v1::CheckUrlRequest request;
    request.set_mode(v1::CLAIM_MODE_PEEK);
    request.add_items()->set_url(url);
    v1::CheckUrlResponse response;
    grpc::Status s = stub_->CheckUrl(&ctx, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.results_size() == 1 ? response.results(0).verdict()
                                        : v1::URL_VERDICT_UNSPECIFIED;
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Dedup::Stub> stub_;
};

TEST_F(E2eContentTest, MixedBatchAnswersEveryItemAndBadOnesAreInvalid) {
  v1::ContentItem far = Item("https://bad.example/far", "a fine text asking too much");
  far.set_max_hamming_distance(4);
  struct Bad {
    v1::ContentItem item;
    const char* want;
  };
  const std::vector<Bad> bad = {
      {Item("https://bad.example/empty", ""), "empty or only whitespace"},
      {Item("https://bad.example/ws", " \n\t  \r\n"), "empty or only whitespace"},
      {Item("https://bad.example/utf8", "caf\xc3\x28"), "invalid UTF-8"},
      {Item("https://bad.example/nul", std::string("a\0b", 3)), "NUL byte"},
      {Item("", "text without a URL"), "url: is empty"},
      {Item("javascript:alert(1)", "text from a script URL"), "url: "},
      {Item("https://bad.example/canon", "bad canonical", "mailto:a@example.com"),
       "canonical_url: "},
      {far, "(--simhash_max_distance)"},
  };
  std::vector<v1::ContentItem> items = {Item("https://good.example/1", "the first good text")};
  for (const Bad& b : bad) items.push_back(b.item);
  items.push_back(Item("https://good.example/2", "the second good text"));
  items.push_back(Item("https://good.example/3", "THE FIRST GOOD TEXT"));

  std::vector<v1::ContentResult> r = Check(items);
  ASSERT_EQ(r.size(), items.size());
  EXPECT_EQ(r[0].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[0].recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  EXPECT_EQ(r[0].content_hash().size(), 64u);
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(r[1 + i].verdict(), v1::CONTENT_VERDICT_INVALID) << i;
    EXPECT_THAT(r[1 + i].error(), HasSubstr(bad[i].want)) << i;
  }
  EXPECT_EQ(r[bad.size() + 1].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[bad.size() + 2].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(r[bad.size() + 2].owner_url(), "https://good.example/1");
  // Still serving; the bad items' URLs were not recorded.
  EXPECT_EQ(CheckOne("https://good.example/4", "a later text").verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(PeekUrl("https://bad.example/empty"), v1::URL_VERDICT_NEW);
  EXPECT_EQ(PeekUrl("https://good.example/2"), v1::URL_VERDICT_SEEN);
}

TEST_F(E2eContentTest, WholeRequestErrors) {
  v1::CheckContentRequest empty;
  v1::CheckContentResponse response;
  grpc::Status s = Call(empty, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("no items"));

  v1::CheckContentRequest over;
  for (int i = 0; i < 10001; ++i) *over.add_items() = Item("https://o.example/", "x");
  s = Call(over, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("the limit is 10000"));
}

// A text of its own per round (long enough for MinHash matching, which is
// on by default, and sharing no 3-word shingle with another round's).
std::string RaceText(int round) {
  std::string text = absl::StrCat("Round ", round, " of the race:");
  for (int w = 0; w < 12; ++w) absl::StrAppend(&text, " r", round, "w", w);
  return text;
}

TEST_F(E2eContentTest, ConcurrentSendersOfOneTextGetExactlyOneNew) {
  constexpr int kThreads = 8, kRounds = 10;
  // results[round][thread]
  std::vector<std::vector<v1::ContentResult>> results(kRounds,
                                                      std::vector<v1::ContentResult>(kThreads));
  std::atomic<int> errors{0};
  RoundBarrier barrier(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = v1::Dedup::NewStub(channel_);
      for (int round = 0; round < kRounds; ++round) {
        v1::CheckContentRequest request;
        *request.add_items() =
            Item(absl::StrCat("https://host", t, ".example/round/", round), RaceText(round));
        barrier.Wait();  // all threads send together
        v1::CheckContentResponse response;
        grpc::Status s = Call(request, &response, stub.get());
        if (!s.ok() || response.results_size() != 1) {
          ++errors;
          continue;
        }
        results[round][t] = response.results(0);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  ASSERT_EQ(errors.load(), 0);

  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    int news = 0;
    std::string owner;
    for (const v1::ContentResult& r : results[round]) {
      if (r.verdict() == v1::CONTENT_VERDICT_NEW) {
        ++news;
        owner = r.url();
      }
    }
    ASSERT_EQ(news, 1);
    std::multiset<uint64_t> alias_counts;
    for (const v1::ContentResult& r : results[round]) {
      if (r.verdict() == v1::CONTENT_VERDICT_NEW) continue;
      EXPECT_EQ(r.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
      EXPECT_EQ(r.owner_url(), owner);
      EXPECT_EQ(r.content_hash(), results[round][0].content_hash());
      alias_counts.insert(r.alias_count());
    }
    // Claims are atomic: the duplicates saw the alias list grow one by one.
    std::multiset<uint64_t> want;
    for (int k = 1; k < kThreads; ++k) want.insert(k);
    EXPECT_EQ(alias_counts, want);
    // Afterwards the owner's text has N-1 aliases: every other sender.
    v1::ContentResult peek = CheckOne(owner, RaceText(round), v1::CLAIM_MODE_PEEK);
    EXPECT_EQ(peek.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
    EXPECT_EQ(peek.alias_count(), static_cast<uint64_t>(kThreads - 1));
    std::set<std::string> aliases(peek.alias_urls().begin(), peek.alias_urls().end());
    std::set<std::string> want_aliases;
    for (const v1::ContentResult& r : results[round]) {
      if (r.url() != owner) want_aliases.insert(r.url());
    }
    EXPECT_EQ(aliases, want_aliases);
  }
}

TEST_F(E2eContentTest, RestartKeepsDuplicatesAliasesRecrawlAndNearDuplicates) {
  const std::string policy = PolicyText();
  ASSERT_GT(policy.size(), 5000u) << "missing testdata";
  ASSERT_NE(PolicyTextOneWordEdited(), policy);
  ASSERT_EQ(CheckOne("https://a.example/1", "Shared text served by three URLs.").verdict(),
            v1::CONTENT_VERDICT_NEW);
  CheckOne("https://b.example/1", "Shared text served by three URLs.");
  CheckOne("https://c.example/1", "Shared text served by three URLs.");
  std::vector<v1::ContentResult> canonical =
      Check({Item("https://d.example/amp/story", "A story with a canonical URL.", "/story")});
  ASSERT_EQ(canonical[0].owner_url(), "https://d.example/story");
  ASSERT_EQ(CheckOne("https://news.example/", "Monday: the front page.").verdict(),
            v1::CONTENT_VERDICT_NEW);
  const v1::ContentResult original = CheckOne("https://docs.example/policy", policy);
  ASSERT_EQ(original.verdict(), v1::CONTENT_VERDICT_NEW);

  absl::StatusOr<int> code = server_->Terminate();
  ASSERT_THAT(code, IsOk());
  EXPECT_EQ(*code, 0) << server_->Logs();
  EXPECT_THAT(server_->Logs(), HasSubstr("stopped cleanly"));
  StartServer();

  // Exact duplicates and alias lists.
  v1::ContentResult dup = CheckOne("https://e.example/1", "shared text served by three urls.");
  EXPECT_EQ(dup.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(dup.owner_url(), "https://a.example/1");
  EXPECT_THAT(dup.alias_urls(),
              ElementsAre("https://b.example/1", "https://c.example/1", "https://e.example/1"));
  EXPECT_EQ(dup.alias_count(), 3u);
  // Canonical identity and seen URLs.
  v1::ContentResult story =
      CheckOne("https://d.example/story", "A story with a canonical URL.", v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(story.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(story.owner_url(), "https://d.example/story");
  EXPECT_THAT(story.alias_urls(), ElementsAre("https://d.example/amp/story"));
  EXPECT_EQ(PeekUrl("https://d.example/amp/story"), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(PeekUrl("https://d.example/story"), v1::URL_VERDICT_SEEN);
  // Re-crawl state.
  EXPECT_EQ(CheckOne("https://news.example/", "Monday: the front page.").recrawl(),
            v1::RECRAWL_STATUS_UNCHANGED);
  EXPECT_EQ(CheckOne("https://news.example/", "Tuesday: another page.").recrawl(),
            v1::RECRAWL_STATUS_CHANGED);
  // Near-duplicate detection: the index was rebuilt from the store.
  v1::ContentResult near =
      CheckOne("https://mirror.example/policy", PolicyTextOneWordEdited(), v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(near.verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE);
  EXPECT_EQ(near.owner_url(), "https://docs.example/policy");
  ASSERT_EQ(near.near_matches_size(), 1);
  EXPECT_EQ(near.near_matches(0).content_hash(), original.content_hash());
  EXPECT_EQ(near.near_matches(0).simhash(), original.simhash());
  EXPECT_EQ(near.first_seen_time().seconds(), original.first_seen_time().seconds());
}

TEST_F(E2eContentTest, KillMinus9LosesNoAcknowledgedDocument) {
  // Several clients claim distinct documents as fast as they can; the server
  // is SIGKILLed while they run. Every document acknowledged before the
  // kill must be an EXACT_DUPLICATE of its first URL after the restart.
  constexpr int kThreads = 4, kMaxBatches = 300, kBatch = 50;
  struct Acked {
    std::string url;
    std::string text;
  };
  std::vector<std::vector<Acked>> acked(kThreads);
  std::atomic<int> batches_done{0};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = v1::Dedup::NewStub(channel_);
      for (int b = 0; b < kMaxBatches; ++b) {
        v1::CheckContentRequest request;
        std::vector<Acked> sent;
        for (int i = 0; i < kBatch; ++i) {
          sent.push_back({absl::StrCat("https://k.example/", t, "/", b, "/", i),
                          absl::StrCat("Document ", t, "-", b, "-", i,
                                       " of the crash test, with a few more words.")});
          *request.add_items() = Item(sent.back().url, sent.back().text);
        }
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        v1::CheckContentResponse response;
        if (!stub->CheckContent(&ctx, request, &response).ok()) return;  // server gone
        for (int i = 0; i < response.results_size(); ++i) {
          // The short texts differ in one token, so some are near
          // duplicates of others: recorded all the same.
          const v1::ContentVerdict v = response.results(i).verdict();
          if (v == v1::CONTENT_VERDICT_NEW || v == v1::CONTENT_VERDICT_NEAR_DUPLICATE) {
            acked[t].push_back(sent[i]);
          } else {
            ++unexpected;
          }
        }
        ++batches_done;
      }
    });
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (batches_done.load() < 20 && absl::Now() < give_up) std::this_thread::yield();
  server_->Kill();
  for (std::thread& th : threads) th.join();
  std::vector<Acked> all;
  for (const auto& v : acked) all.insert(all.end(), v.begin(), v.end());
  EXPECT_EQ(unexpected.load(), 0);
  ASSERT_GE(all.size(), 20u * kBatch);
  StartServer();
  size_t lost = 0;
  for (size_t start = 0; start < all.size(); start += 1000) {
    std::vector<v1::ContentItem> items;
    for (size_t i = start; i < std::min(all.size(), start + 1000); ++i) {
      items.push_back(Item("https://after.example/check", all[i].text));
    }
    std::vector<v1::ContentResult> r = Check(items, v1::CLAIM_MODE_PEEK);
    ASSERT_EQ(r.size(), items.size());
    for (size_t j = 0; j < r.size(); ++j) {
      if (r[j].verdict() != v1::CONTENT_VERDICT_EXACT_DUPLICATE ||
          r[j].owner_url() != all[start + j].url) {
        ++lost;
      }
    }
  }
  EXPECT_EQ(lost, 0u) << "of " << all.size() << " acknowledged documents";
}

TEST_F(E2eContentTest, HugeTextIsResourceExhaustedAndTheServerKeepsServing) {
  v1::CheckContentRequest request;
  *request.add_items() = Item("https://huge.example/", std::string(64 << 20, 'a'));
  v1::CheckContentResponse response;
  grpc::Status s = Call(request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // gRPC's own message names the --max_message_bytes limit in bytes.
  EXPECT_THAT(s.error_message(), HasSubstr(std::to_string(16 << 20)));
  EXPECT_EQ(CheckOne("https://small.example/", "a small text after the huge one").verdict(),
            v1::CONTENT_VERDICT_NEW);
}

TEST_F(E2eContentTest, TextOverMaxTextBytesIsThatItemsInvalid) {
  ASSERT_THAT(server_->Terminate(), IsOk());
  StartServer({"--max_text_bytes=1000"});
  std::vector<v1::ContentResult> r =
      Check({Item("https://t.example/small", "a small text"),
             Item("https://t.example/big", std::string(1001, 'x')),
             Item("https://t.example/limit", std::string(1000, 'y'))});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[1].verdict(), v1::CONTENT_VERDICT_INVALID);
  EXPECT_THAT(r[1].error(), HasSubstr("1001 bytes; the limit is 1000 (--max_text_bytes)"));
  EXPECT_EQ(r[2].verdict(), v1::CONTENT_VERDICT_NEW) << r[2].error();
}

TEST_F(E2eContentTest, StoreOfAnotherShingleSizeFailsToStartClearly) {
  ASSERT_EQ(CheckOne("https://s.example/", "recorded with three-word shingles").verdict(),
            v1::CONTENT_VERDICT_NEW);
  absl::StatusOr<int> code = server_->Terminate();
  ASSERT_THAT(code, IsOk());
  ASSERT_EQ(*code, 0);
  auto r = RunCommand({DEDUPD_BINARY, "--listen=127.0.0.1:0", "--data_dir=" + DataDir(),
                       "--simhash_shingle_words=4"},
                      "", absl::Seconds(30));
  ASSERT_THAT(r, IsOk());
  EXPECT_NE(r->exit_code, 0);
  EXPECT_THAT(r->err, Not(HasSubstr("serving on")));
  EXPECT_THAT(r->err, HasSubstr("3-word shingles"));
  EXPECT_THAT(r->err, HasSubstr("--simhash_shingle_words"));
  // The store is intact: the right value opens it and finds the text.
  StartServer({"--simhash_shingle_words=3"});
  EXPECT_EQ(CheckOne("https://s2.example/", "recorded with three-word shingles").verdict(),
            v1::CONTENT_VERDICT_EXACT_DUPLICATE);
}

#ifdef DEDUPCTL_BINARY
TEST_F(E2eContentTest, DedupctlContentCheckReadsJsonLines) {
  const std::string input =
      "{\"url\":\"https://j.example/a\",\"text\":\"Piped through dedupctl.\",\"extra\":1}\n"
      "{\"url\":\"https://j.example/b\",\"canonical_url\":\"/c\","
      "\"text\":\"PIPED   through dedupctl.\"}\n"
      "{\"url\":\"https://j.example/d\"}\n"
      "{\"url\":\"https://j.example/e\",\"text\":\" \\t \"}\n"
      "not json\n";
  auto r = RunCommand(
      {DEDUPCTL_BINARY, "content", "check", "--server", server_->address(), "--deadline", "30"},
      input);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->exit_code, 1) << r->err;  // some documents are INVALID
  std::vector<std::string> lines = absl::StrSplit(r->out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << r->out;
  EXPECT_THAT(lines[0], HasSubstr("\"verdict\":\"NEW\""));
  EXPECT_THAT(lines[0], HasSubstr("\"owner_url\":\"https://j.example/a\""));
  EXPECT_THAT(lines[1], HasSubstr("\"verdict\":\"EXACT_DUPLICATE\""));
  EXPECT_THAT(lines[1], HasSubstr("\"canonical_url\":\"https://j.example/c\""));
  EXPECT_THAT(lines[1], HasSubstr("\"owner_url\":\"https://j.example/a\""));
  EXPECT_THAT(lines[2], HasSubstr("\"verdict\":\"INVALID\""));
  EXPECT_THAT(lines[2], HasSubstr("\"line\":3"));
  EXPECT_THAT(lines[3], HasSubstr("\"verdict\":\"INVALID\""));
  EXPECT_THAT(lines[3], HasSubstr("empty or only whitespace"));
  EXPECT_THAT(lines[4], HasSubstr("\"verdict\":\"INVALID\""));
  EXPECT_THAT(lines[4], HasSubstr("\"line\":5"));
  // What dedupctl claimed is in the server: the text, its aliases, the URLs.
  v1::ContentResult peek =
      CheckOne("https://j.example/z", "piped through dedupctl.", v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(peek.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(peek.owner_url(), "https://j.example/a");
  EXPECT_THAT(peek.alias_urls(), ElementsAre("https://j.example/b", "https://j.example/c"));
  EXPECT_EQ(PeekUrl("https://j.example/c"), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(PeekUrl("https://j.example/d"), v1::URL_VERDICT_NEW);

  // One document from standard input with --url: a peek records nothing.
  auto one = RunCommand({DEDUPCTL_BINARY, "content", "peek", "--server", server_->address(),
                         "--url", "https://j.example/y"},
                        "Piped through dedupctl.");
  ASSERT_THAT(one, IsOk());
  EXPECT_EQ(one->exit_code, 0) << one->err;
  EXPECT_THAT(one->out, HasSubstr("\"verdict\":\"EXACT_DUPLICATE\""));
  EXPECT_EQ(PeekUrl("https://j.example/y"), v1::URL_VERDICT_NEW);
}

TEST_F(E2eContentTest, DedupctlDocumentIdsAndNamespacesThroughTheRealBinary) {
  // crawl-a: a page, then a pipeline's document id with the same text, an
  // id with a bad byte, and an id given with a url.
  const std::string input =
      "{\"url\":\"https://n.example/a\",\"text\":\"Text one of namespace a.\"}\n"
      "{\"document_id\":\"s3://bucket/A.txt\",\"text\":\"text ONE of namespace a.\"}\n"
      "{\"document_id\":\"s3://bucket/B.txt\",\"text\":\"A text only an id owns.\"}\n"
      "{\"document_id\":\"x\",\"url\":\"https://n.example/x\",\"text\":\"t\"}\n";
  auto r = RunCommand({DEDUPCTL_BINARY, "content", "check", "--server", server_->address(),
                       "--namespace", "crawl-a"},
                      input);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->exit_code, 1) << r->err;  // the last line is INVALID
  std::vector<std::string> lines = absl::StrSplit(r->out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u) << r->out;
  EXPECT_THAT(lines[1], HasSubstr("\"verdict\":\"EXACT_DUPLICATE\",\"document_id\":"
                                  "\"s3://bucket/A.txt\""));
  EXPECT_THAT(lines[1], HasSubstr("\"owner_url\":\"https://n.example/a\""));
  EXPECT_THAT(lines[1], HasSubstr("\"alias_document_ids\":[\"s3://bucket/A.txt\"]"));
  EXPECT_THAT(lines[2], HasSubstr("\"verdict\":\"NEW\""));
  EXPECT_THAT(lines[2], HasSubstr("\"owner_document_id\":\"s3://bucket/B.txt\""));
  EXPECT_THAT(lines[3], HasSubstr("\"reason\":\"BAD_DOCUMENT_ID\""));
  EXPECT_THAT(lines[3], HasSubstr("document_id: is given with url"));

  // The empty namespace saw none of it: the same text is NEW there, and
  // the page's URL was seen in crawl-a only.
  EXPECT_EQ(
      CheckOne("https://n.example/a", "Text one of namespace a.", v1::CLAIM_MODE_PEEK).verdict(),
      v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(PeekUrl("https://n.example/a"), v1::URL_VERDICT_NEW);
  auto peek = RunCommand({DEDUPCTL_BINARY, "content", "peek", "--server", server_->address(),
                          "--namespace", "crawl-a", "--url", "https://n.example/z"},
                         "A text only an id owns.");
  ASSERT_THAT(peek, IsOk());
  EXPECT_EQ(peek->exit_code, 0) << peek->err;
  EXPECT_THAT(peek->out, HasSubstr("\"owner_document_id\":\"s3://bucket/B.txt\""));
  // A bad namespace fails the whole request, with the rule in the message.
  auto bad = RunCommand({DEDUPCTL_BINARY, "content", "check", "--server", server_->address(),
                         "--namespace", "no spaces"},
                        "{\"url\":\"https://n.example/q\",\"text\":\"q\"}\n");
  ASSERT_THAT(bad, IsOk());
  EXPECT_NE(bad->exit_code, 0);
  EXPECT_THAT(bad->err + bad->out, HasSubstr("namespace: byte 2 (0x20)"));
}

// MinHash near matching through dedupctl: a page with 2% of its words
// substituted is beyond SimHash's 3 bits but ~0.88 similar by 3-word
// shingles, so the server's default min_jaccard (0.85) finds it; the flag
// and a line's "min_jaccard" reach the server, which judges the range.
TEST_F(E2eContentTest, DedupctlNearByJaccardMinJaccardFlagAndBadLine) {
  const std::string original = PolicyText();
  ASSERT_GT(original.size(), 5000u) << "missing testdata";
  auto stored = RunCommand({DEDUPCTL_BINARY, "content", "check", "--server", server_->address(),
                            "--url", "https://m.example/policy"},
                           original);
  ASSERT_THAT(stored, IsOk());
  ASSERT_EQ(stored->exit_code, 0) << stored->err;
  EXPECT_EQ(NumberMember(stored->out, "applied_min_jaccard"), 0.85) << stored->out;

  const std::string edited = SubstituteWords(original, 50, 7);
  auto near = RunCommand({DEDUPCTL_BINARY, "content", "peek", "--server", server_->address(),
                          "--url", "https://mirror.example/policy"},
                         edited);
  ASSERT_THAT(near, IsOk());
  EXPECT_EQ(near->exit_code, 0) << near->err;
  EXPECT_THAT(near->out, HasSubstr("\"verdict\":\"NEAR_DUPLICATE\""));
  EXPECT_THAT(near->out, HasSubstr("\"near_matches\":[{\"url\":\"https://m.example/policy\""));
  EXPECT_THAT(near->out, HasSubstr("\"measure\":\"JACCARD\"}]"));
  EXPECT_GT(NumberMember(near->out, "distance"), 3) << near->out;
  const double estimate = NumberMember(near->out, "estimated_jaccard");
  EXPECT_GE(estimate, 0.85) << near->out;
  EXPECT_LT(estimate, 0.97) << near->out;
  EXPECT_EQ(NumberMember(near->out, "applied_min_jaccard"), 0.85) << near->out;

  // --min_jaccard above the estimate: NEW, and the line says what was used.
  auto strict = RunCommand({DEDUPCTL_BINARY, "content", "peek", "--server", server_->address(),
                            "--url", "https://mirror.example/policy", "--min_jaccard", "0.99"},
                           edited);
  ASSERT_THAT(strict, IsOk());
  EXPECT_EQ(strict->exit_code, 0) << strict->err;
  EXPECT_THAT(strict->out, HasSubstr("\"verdict\":\"NEW\""));
  EXPECT_EQ(NumberMember(strict->out, "applied_min_jaccard"), 0.99) << strict->out;

  // Below the server's --min_jaccard_floor (0.8): that document's INVALID,
  // from a line and from the flag alike; a short text has MinHash off (0).
  const std::string lines =
      "{\"url\":\"https://m.example/low\",\"text\":\"low\",\"min_jaccard\":0.5}\n"
      "{\"url\":\"https://m.example/short\",\"text\":\"a short text\"}\n";
  auto bad = RunCommand(
      {DEDUPCTL_BINARY, "content", "peek", "--server", server_->address(), "--deadline", "30"},
      lines);
  ASSERT_THAT(bad, IsOk());
  EXPECT_EQ(bad->exit_code, 1) << bad->err;
  std::vector<std::string> out = absl::StrSplit(bad->out, '\n', absl::SkipEmpty());
  ASSERT_EQ(out.size(), 2u) << bad->out;
  EXPECT_THAT(out[0], HasSubstr("\"verdict\":\"INVALID\""));
  EXPECT_THAT(out[0], HasSubstr("\"reason\":\"BAD_MIN_JACCARD\""));
  EXPECT_THAT(out[0], HasSubstr("min_jaccard 0.5"));
  EXPECT_THAT(out[1], HasSubstr("\"verdict\":\"NEW\""));
  EXPECT_THAT(out[1], HasSubstr("\"applied_min_jaccard\":0}"));
  auto flag = RunCommand({DEDUPCTL_BINARY, "content", "peek", "--server", server_->address(),
                          "--url", "https://m.example/low", "--min_jaccard", "0.5"},
                         "low");
  ASSERT_THAT(flag, IsOk());
  EXPECT_EQ(flag->exit_code, 1) << flag->err;
  EXPECT_THAT(flag->out, HasSubstr("\"reason\":\"BAD_MIN_JACCARD\""));
}
#endif  // DEDUPCTL_BINARY

}  // namespace
}  // namespace dedupd
